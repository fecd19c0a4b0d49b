package dev.idempotency.internal.consumer;

import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

import org.springframework.transaction.TransactionSystemException;

/**
 * Invokes a listener method inside the starter's transaction and tells its own failure
 * apart from the failure of the rollback after it, for the record, batch and lease steps
 * alike.
 */
final class ListenerInvocations {

	// the listener's own failure, for when the rollback after it fails and hides it
	private static final ThreadLocal<Throwable> LISTENER_FAILURE = new ThreadLocal<>();

	private ListenerInvocations() {
	}

	/**
	 * Invoke the listener method; a checked exception is wrapped so that a transaction
	 * callback can throw it, and unwrapped again by {@link #original(Throwable)}.
	 */
	static @Nullable Object proceed(MethodInvocation invocation) {
		LISTENER_FAILURE.remove();
		try {
			return ListenerMethodRules.requireCompleted(invocation.proceed(), invocation.getMethod());
		}
		catch (RuntimeException | Error ex) {
			LISTENER_FAILURE.set(ex);
			throw ex;
		}
		catch (Throwable ex) {
			LISTENER_FAILURE.set(ex);
			throw new CheckedListenerException(ex);
		}
	}

	/**
	 * Return the failure to report: the listener's own exception, also when the rollback
	 * after it failed too (a killed connection) and the transaction threw the rollback's
	 * exception instead, which is then kept as suppressed.
	 * @param ex what the transaction threw
	 * @return the failure
	 */
	static Throwable original(Throwable ex) {
		Throwable listenerFailure = LISTENER_FAILURE.get();
		LISTENER_FAILURE.remove();
		Throwable failure = ex;
		if (ex instanceof TransactionSystemException rollbackFailure
				&& rollbackFailure.getApplicationException() != null) {
			failure = rollbackFailure.getApplicationException();
			failure.addSuppressed(rollbackFailure);
		}
		else if (listenerFailure != null && ex != listenerFailure
				&& !(ex instanceof CheckedListenerException checked && checked.getCause() == listenerFailure)) {
			failure = listenerFailure;
			failure.addSuppressed(ex);
		}
		if (failure instanceof CheckedListenerException checked && checked.getCause() != null) {
			failure = checked.getCause();
		}
		return failure;
	}

	static final class CheckedListenerException extends RuntimeException {

		private static final long serialVersionUID = 1L;

		CheckedListenerException(Throwable cause) {
			super(cause);
		}

		@Override
		public synchronized Throwable getCause() {
			return super.getCause();
		}

	}

}
