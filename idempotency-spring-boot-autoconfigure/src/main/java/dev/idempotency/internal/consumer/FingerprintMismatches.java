package dev.idempotency.internal.consumer;

import java.util.Locale;

import dev.idempotency.FingerprintMismatchPolicy;
import dev.idempotency.IdempotencyFingerprintMismatchException;
import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.ProcessedMessage;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * A record whose key was claimed for a payload with another fingerprint, in either mode:
 * counted, then rejected with the non-retryable
 * {@link IdempotencyFingerprintMismatchException} or logged and skipped, as
 * {@code idempotency.lease.fingerprint-mismatch} says.
 */
final class FingerprintMismatches {

	private static final Log logger = LogFactory.getLog(FingerprintMismatches.class);

	private FingerprintMismatches() {
	}

	/**
	 * Return whether a fingerprint differs from the stored one. A claim without one, or a
	 * row without one (stored before fingerprints, or by a listener without), never does.
	 */
	static boolean differ(@Nullable String fingerprint, @Nullable String stored) {
		return fingerprint != null && stored != null && !fingerprint.equals(stored);
	}

	static @Nullable Object handle(FingerprintMismatchPolicy policy, ListenerMethod method, ListenerMetrics metrics,
			ProcessedMessage message, @Nullable Object[] arguments) {
		metrics.fingerprintMismatch(policy.name().toLowerCase(Locale.ROOT));
		metrics.message(Outcome.REJECTED, DecisionSource.STORE);
		String text = "Record " + RecordCoordinates.describe(message) + " (scope " + message.scope() + ") for "
				+ method.name() + " carries a key that was claimed for another payload (the fingerprints differ): "
				+ "a client error, not a duplicate";
		if (policy == FingerprintMismatchPolicy.REJECT) {
			throw new IdempotencyFingerprintMismatchException(
					text + " (idempotency.lease.fingerprint-mismatch=reject)");
		}
		logger.warn(text + "; skipped (idempotency.lease.fingerprint-mismatch=warn)");
		method.acknowledgeSkipped(arguments);
		return null;
	}

}
