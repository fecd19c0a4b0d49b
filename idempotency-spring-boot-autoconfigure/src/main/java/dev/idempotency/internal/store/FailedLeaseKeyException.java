package dev.idempotency.internal.store;

import dev.idempotency.IdempotencyClaimFailedException;
import dev.idempotency.store.ProcessedMessage;

/**
 * A batch claim met a key that a lease-mode listener of the same scope marked
 * {@code FAILED}: says which message of the batch it was, so that the batch listener
 * names only that record as failed.
 */
public final class FailedLeaseKeyException extends IdempotencyClaimFailedException {

	private static final long serialVersionUID = 1L;

	private final transient ProcessedMessage failedMessage;

	FailedLeaseKeyException(String message, ProcessedMessage failedMessage) {
		super(message);
		this.failedMessage = failedMessage;
	}

	/**
	 * Return the message whose key is marked failed.
	 * @return the message
	 */
	public ProcessedMessage failedMessage() {
		return this.failedMessage;
	}

}
