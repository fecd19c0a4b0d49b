package dev.idempotency.streams;

import org.jspecify.annotations.Nullable;

/**
 * Thrown by the deduplicating processor when the key extractor failed on a record, or
 * when a record has no key and the {@link StreamsMissingKeyPolicy} is {@code FAIL}. The message
 * names the processor and the record's coordinates, never its payload.
 */
public class IdempotencyKeyExtractionException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	/**
	 * Create an exception.
	 * @param message the message
	 * @param cause the failure of the extractor, if any
	 */
	public IdempotencyKeyExtractionException(String message, @Nullable Throwable cause) {
		super(message, cause);
	}

}
