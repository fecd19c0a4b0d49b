package dev.idempotency.internal.consumer;

import org.jspecify.annotations.Nullable;

/**
 * Remembers, per consumer thread, the last failure that came out of an
 * {@code @Idempotent} method, so that a {@code KafkaListenerErrorHandler} wrapper can tell
 * it from the failures of other listeners.
 */
final class IdempotentFailures {

	private static final ThreadLocal<Throwable> LAST = new ThreadLocal<>();

	private static final int MAX_DEPTH = 32;

	private IdempotentFailures() {
	}

	static void remember(Throwable failure) {
		LAST.set(failure);
	}

	static void forget() {
		LAST.remove();
	}

	/**
	 * Return whether the failure, or one of its causes, is the last one that came out of
	 * an {@code @Idempotent} method on this thread, and forget it.
	 * @param failure the failure the listener adapter reports
	 * @return {@code true} if it came out of an {@code @Idempotent} method
	 */
	static boolean cameOutOfIdempotentMethod(@Nullable Throwable failure) {
		Throwable last = LAST.get();
		if (last == null) {
			return false;
		}
		Throwable cause = failure;
		for (int depth = 0; cause != null && depth < MAX_DEPTH; depth++) {
			if (cause == last) {
				LAST.remove();
				return true;
			}
			cause = (cause.getCause() != cause) ? cause.getCause() : null;
		}
		return false;
	}

}
