package dev.idempotency.internal.consumer;

import java.lang.reflect.Type;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.key.KeyExpressions;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.convert.DurationStyle;
import org.springframework.expression.Expression;

/**
 * The lease-mode options of one listener method, from its annotation and the settings;
 * the fingerprint and stored result apply to the transactional mode too.
 *
 * @param lease the lease of each claim
 * @param nonRetryable exception types that mark the claim {@code FAILED}
 * @param fingerprint whether to fingerprint the payload
 * @param fingerprintExpression what to fingerprint instead of the record value, or
 * {@code null}
 * @param storeResult whether to store the return value
 * @param resultType the method's generic return type
 */
record LeaseOptions(Duration lease, List<Class<? extends Throwable>> nonRetryable, boolean fingerprint,
		@Nullable Expression fingerprintExpression, boolean storeResult, Type resultType) {

	static LeaseOptions of(ListenerMethod method, LeaseSettings settings) {
		Idempotent idempotent = method.idempotent();
		List<Class<? extends Throwable>> nonRetryable = new ArrayList<>(settings.nonRetryable());
		nonRetryable.addAll(Arrays.asList(idempotent.nonRetryable()));
		Expression expression = idempotent.fingerprintExpression().isEmpty() ? null
				: KeyExpressions.parse(idempotent.fingerprintExpression());
		return new LeaseOptions(idempotent.lease().isEmpty() ? settings.lease() : lease(idempotent.lease()),
				List.copyOf(nonRetryable), idempotent.fingerprint() || expression != null, expression,
				idempotent.storeResult(), method.method().getGenericReturnType());
	}

	/**
	 * Check the lease-mode attributes of an annotation, and the fingerprint and stored
	 * result of either mode, for the start-up checks of
	 * {@link ListenerMethod#describe}.
	 * @param idempotent the annotation
	 * @param display the method, for the message
	 * @param batch whether the method takes a batch of records
	 * @throws IllegalStateException naming the method, if they are not valid
	 */
	static void check(Idempotent idempotent, java.lang.reflect.Method method, String display, boolean batch) {
		if (idempotent.mode() != Idempotent.Mode.LEASE) {
			if (!idempotent.lease().isEmpty() || idempotent.nonRetryable().length > 0) {
				throw new IllegalStateException("@Idempotent method " + display + " sets lease or nonRetryable, "
						+ "which apply to mode = LEASE only; set mode = Idempotent.Mode.LEASE or remove them");
			}
			if (batch && TransactionalRows.readsRow(idempotent)) {
				throw new IllegalStateException("@Idempotent method " + display + " takes a batch of records, and "
						+ "fingerprint, fingerprintExpression and storeResult are supported on record listeners "
						+ "only: take one record, or remove them");
			}
		}
		else if (batch) {
			throw new IllegalStateException("@Idempotent method " + display + " takes a batch of records, and "
					+ "mode = LEASE is supported on record listeners only: take one record, or use the "
					+ "transactional mode");
		}
		if (idempotent.storeResult() && method.getReturnType() == void.class) {
			throw new IllegalStateException("@Idempotent method " + display + " sets storeResult but returns "
					+ "void: there is no result to store");
		}
		if (!idempotent.lease().isEmpty()) {
			try {
				Duration lease = lease(idempotent.lease());
				if (lease.isZero() || lease.isNegative()) {
					throw new IllegalArgumentException("it must be positive");
				}
			}
			catch (IllegalArgumentException ex) {
				throw new IllegalStateException("@Idempotent method " + display + " has an invalid lease '"
						+ idempotent.lease() + "' (expected a duration such as 30s or PT2M): " + ex.getMessage(), ex);
			}
		}
		if (!idempotent.fingerprintExpression().isEmpty()) {
			try {
				KeyExpressions.parse(idempotent.fingerprintExpression());
			}
			catch (IllegalArgumentException ex) {
				throw new IllegalStateException("@Idempotent method " + display + " fingerprintExpression: "
						+ ex.getMessage(), ex);
			}
		}
	}

	private static Duration lease(String text) {
		return DurationStyle.detectAndParse(text);
	}

	boolean isNonRetryable(Throwable failure) {
		Throwable cause = failure;
		// bounded: a cause chain may loop
		for (int depth = 0; cause != null && depth < 32; depth++, cause = cause.getCause()) {
			for (Class<? extends Throwable> type : this.nonRetryable) {
				if (type.isInstance(cause)) {
					return true;
				}
			}
		}
		return false;
	}

}
