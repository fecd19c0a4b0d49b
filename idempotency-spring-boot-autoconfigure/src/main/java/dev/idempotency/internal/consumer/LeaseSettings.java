package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;

import dev.idempotency.FingerprintMismatchPolicy;

/**
 * The application-wide settings of {@code @Idempotent(mode = LEASE)} listeners.
 *
 * @param lease the lease of a claim, unless the annotation gives one
 * @param nonRetryable exception types that mark a claim {@code FAILED}, besides the
 * annotation's own
 * @param fingerprintMismatch what to do with a key claimed for another payload
 * @param maxResultSize the largest stored result, in bytes of JSON
 */
public record LeaseSettings(Duration lease, List<Class<? extends Throwable>> nonRetryable,
		FingerprintMismatchPolicy fingerprintMismatch, long maxResultSize) {

	/**
	 * Settings with a lease of one minute, no non-retryable types, {@code reject} and
	 * results of up to 64 KB.
	 */
	public static final LeaseSettings DEFAULTS = new LeaseSettings(Duration.ofMinutes(1), List.of(),
			FingerprintMismatchPolicy.REJECT, 64 * 1024);

}
