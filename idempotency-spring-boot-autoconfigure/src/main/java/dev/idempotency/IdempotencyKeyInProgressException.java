package dev.idempotency;

/**
 * Thrown when another consumer is processing the same key right now and the store cannot
 * wait for it to finish. The record is retried by the container's error handler; by
 * then the other consumer has completed (the retry is skipped as a duplicate) or its
 * lease has expired (the retry takes the key over).
 */
public class IdempotencyKeyInProgressException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	public IdempotencyKeyInProgressException(String message) {
		super(message);
	}

}
