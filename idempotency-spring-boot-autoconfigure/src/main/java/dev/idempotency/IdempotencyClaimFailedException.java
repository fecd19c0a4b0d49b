package dev.idempotency;

/**
 * Thrown when the key of a record belongs to a claim marked {@code FAILED}: an
 * {@code @Idempotent(mode = LEASE)} method failed on it with a non-retryable exception,
 * now (the exception is then the cause) or on an earlier delivery. Retrying cannot help:
 * the starter registers this exception as not retryable on the container's
 * {@code DefaultErrorHandler}, so the record goes to its recoverer (a dead-letter topic,
 * for example) at once. To process the key again, delete its row from the
 * processed-messages table.
 */
public class IdempotencyClaimFailedException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	public IdempotencyClaimFailedException(String message) {
		super(message);
	}

	public IdempotencyClaimFailedException(String message, Throwable cause) {
		super(message, cause);
	}

}
