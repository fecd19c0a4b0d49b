package dev.idempotency.store;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * Claims of keys that commit on their own, before the listener's work, as
 * {@code IN_PROGRESS} with a lease and a fencing token; for {@code @Idempotent(mode =
 * LEASE)} listeners. Each method commits its change at once, apart from any transaction
 * of the calling thread. Completion, release and failure are fenced: they change the
 * claim only while it still carries the caller's token.
 */
public interface LeaseStore {

	/**
	 * Claim the message's key with a lease: insert it as {@code IN_PROGRESS}, or take over
	 * a claim whose lease expired (when the fingerprints agree), each time with a new
	 * fencing token; otherwise return the claim that holds the key.
	 * @param message the message
	 * @param lease how long the claim holds the key, counted on the database's clock
	 * @param fingerprint the payload's fingerprint, or {@code null}
	 * @return the claim: acquired by the caller, or the state of the one that holds the key
	 */
	LeaseClaim claim(ProcessedMessage message, Duration lease, @Nullable String fingerprint);

	/**
	 * Mark the claim {@code COMPLETED}, with the listener's result, if it still carries the
	 * token.
	 * @param message the message
	 * @param fencingToken the caller's token
	 * @param result the result as JSON, or {@code null}
	 * @return {@code false} if the claim had been taken over (the lease was lost)
	 */
	boolean complete(ProcessedMessage message, long fencingToken, @Nullable String result);

	/**
	 * Give the key up after a retryable failure, if the claim still carries the token.
	 * @param message the message
	 * @param fencingToken the caller's token
	 * @return {@code false} if the claim had been taken over
	 */
	boolean release(ProcessedMessage message, long fencingToken);

	/**
	 * Mark the claim {@code FAILED} after a non-retryable failure, if it still carries the
	 * token, so that the key is not processed again.
	 * @param message the message
	 * @param fencingToken the caller's token
	 * @param failure a description of the failure
	 * @return {@code false} if the claim had been taken over
	 */
	boolean fail(ProcessedMessage message, long fencingToken, String failure);

}
