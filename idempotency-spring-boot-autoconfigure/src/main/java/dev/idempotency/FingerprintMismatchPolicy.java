package dev.idempotency;

/**
 * What happens to a record whose key was claimed for a payload with another fingerprint.
 */
public enum FingerprintMismatchPolicy {

	/**
	 * Throw {@link dev.idempotency.IdempotencyFingerprintMismatchException}, which is not
	 * retryable: the record goes to the error handler's recoverer (a dead-letter topic, for
	 * example).
	 */
	REJECT,

	/**
	 * Log a warning, count it, and skip the record like a duplicate.
	 */
	WARN

}
