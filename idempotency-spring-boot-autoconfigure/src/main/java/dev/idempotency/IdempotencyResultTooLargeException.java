package dev.idempotency;

/**
 * Thrown when the return value of an {@code @Idempotent(mode = LEASE, storeResult = true)}
 * method, written as JSON, is larger than {@code idempotency.lease.max-result-size}. The
 * method's work is done, so its claim is completed without a stored result (a duplicate
 * is skipped and returns {@code null}); the exception is not retryable and goes to the
 * error handler's recoverer, so the reply is not lost silently.
 */
public class IdempotencyResultTooLargeException extends IdempotencyResultNotStoredException {

	private static final long serialVersionUID = 1L;

	public IdempotencyResultTooLargeException(String message) {
		super(message);
	}

}
