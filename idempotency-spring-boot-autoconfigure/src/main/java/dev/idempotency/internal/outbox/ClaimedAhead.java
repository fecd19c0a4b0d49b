package dev.idempotency.internal.outbox;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * A claim running (or done) on the claimer thread while a batch is being sent.
 */
final class ClaimedAhead {

	private final CompletableFuture<List<OutboxRecord>> claim;

	// when the claim was handed to the claimer thread, so before its transaction
	// set the leases
	private final long startedAt;

	ClaimedAhead(long startedAt, CompletableFuture<List<OutboxRecord>> claim) {
		this.startedAt = startedAt;
		this.claim = claim;
	}

	/**
	 * Return when the claim was handed to the claimer thread.
	 * @return the {@link System#nanoTime()} of the hand-over
	 */
	long startedAt() {
		return this.startedAt;
	}

	List<OutboxRecord> take() {
		try {
			return this.claim.join();
		}
		catch (CompletionException ex) {
			throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
		}
	}

	/**
	 * Wait for the claim.
	 * @return what it claimed, or nothing if it failed (a failed claim leased nothing)
	 */
	List<OutboxRecord> awaitQuietly() {
		try {
			return this.claim.join();
		}
		catch (RuntimeException ex) {
			return List.of();
		}
	}

}
