package dev.idempotency;

/**
 * Thrown when a record carries a key that was claimed for another payload (the payload
 * fingerprints differ) and {@code idempotency.lease.fingerprint-mismatch=reject}. This is
 * a client error, not a duplicate: the starter registers this exception as not retryable
 * on the container's {@code DefaultErrorHandler}, so the record goes to its recoverer at
 * once.
 */
public class IdempotencyFingerprintMismatchException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	public IdempotencyFingerprintMismatchException(String message) {
		super(message);
	}

}
