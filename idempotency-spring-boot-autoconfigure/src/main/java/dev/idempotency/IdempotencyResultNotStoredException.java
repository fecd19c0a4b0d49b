package dev.idempotency;

/**
 * Thrown when the return value of an {@code @Idempotent(mode = LEASE, storeResult = true)}
 * method cannot be stored with its claim: the {@link StoredResultCodec} cannot write it
 * (a cycle of references, say), or the database refuses the JSON (PostgreSQL's
 * {@code jsonb} has no NUL character). The method's work is done, so its claim is
 * completed without a stored result (a duplicate is skipped and returns {@code null}); the
 * exception is not retryable and goes to the error handler's recoverer, so the reply is not
 * lost silently.
 */
public class IdempotencyResultNotStoredException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	public IdempotencyResultNotStoredException(String message, Throwable cause) {
		super(message, cause);
	}

	/**
	 * Create an exception without a cause, for a subclass.
	 * @param message the message
	 */
	protected IdempotencyResultNotStoredException(String message) {
		super(message);
	}

}
