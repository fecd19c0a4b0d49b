package dev.idempotency.store;

import org.jspecify.annotations.Nullable;

/**
 * The result of a {@linkplain LeaseStore#claim lease claim}: the caller's new claim, or the
 * state of the claim that holds the key.
 *
 * @param state the state
 * @param fencingToken the caller's fencing token when {@link State#ACQUIRED}, else the
 * holder's (0 for a claim of the transactional mode, which has none)
 * @param takenOver whether an expired lease was taken over to acquire the claim
 * @param fingerprint the fingerprint stored with the holding claim, or {@code null}
 * @param result the stored result (JSON) of a completed claim, or {@code null}
 * @param failure the description of the failure of a failed claim, or {@code null}
 */
public record LeaseClaim(State state, long fencingToken, boolean takenOver, @Nullable String fingerprint,
		@Nullable String result, @Nullable String failure) {

	/**
	 * Return a claim the caller acquired.
	 * @param fencingToken its fencing token
	 * @param takenOver whether it took over an expired lease
	 * @return the claim
	 */
	public static LeaseClaim acquired(long fencingToken, boolean takenOver) {
		return new LeaseClaim(State.ACQUIRED, fencingToken, takenOver, null, null, null);
	}

	/**
	 * The states of a claim, as the caller sees them.
	 */
	public enum State {

		/** The caller holds the key: run the listener. */
		ACQUIRED,

		/** Another consumer holds the key within its lease. */
		IN_PROGRESS,

		/** The key was processed: a duplicate. */
		COMPLETED,

		/** The key failed with a non-retryable exception: not processed again. */
		FAILED

	}

}
