package dev.idempotency.store;

/**
 * The result of claiming a key: whether the message is new, and, for stores whose claims
 * do not join the listener's transaction, how to finish the claim.
 */
public interface Claim {

	/**
	 * A new key, claimed inside the listener's transaction; nothing to finish.
	 */
	Claim NEW = () -> true;

	/**
	 * A key that was processed before.
	 */
	Claim DUPLICATE = () -> false;

	/**
	 * Return whether the key was new, so that the listener must run.
	 * @return {@code true} for a new key, {@code false} for a duplicate
	 */
	boolean isNew();

	/**
	 * Record that the listener's work succeeded. Called after its transaction committed.
	 * @return {@code false} if the claim had been lost in the meantime (for example, its
	 * lease expired and another consumer took the key over)
	 */
	default boolean complete() {
		return true;
	}

	/**
	 * Give the key up after the listener's work failed, so that a retry can claim it.
	 */
	default void release() {
	}

	/**
	 * Release the new claims of a unit of work that failed, so that its retry can claim
	 * them again. A release that fails is added to the failure as suppressed, and the
	 * others are still released.
	 * @param claims the claims, new or not
	 * @param failure the failure of the unit of work
	 */
	static void releaseNew(Iterable<? extends Claim> claims, Throwable failure) {
		for (Claim claim : claims) {
			if (claim != null && claim.isNew()) {
				try {
					claim.release();
				}
				catch (RuntimeException releaseFailure) {
					failure.addSuppressed(releaseFailure);
				}
			}
		}
	}

}
