package dev.idempotency.store;

/**
 * Records which messages have been processed. Declare a bean of this type to replace the
 * store the starter configures.
 * <p>
 * A {@linkplain #joinsTransaction() transactional} store claims inside the transaction in
 * which the listener method runs, so that the claim commits or rolls back together with
 * the method's work. Other stores claim before the transaction and are told afterwards,
 * through the returned {@link Claim}, whether the work succeeded.
 */
public interface ProcessedMessageStore {

	/**
	 * Claim the message's key in its scope.
	 * @param message the message to claim
	 * @return whether the key was new, and how to finish the claim
	 * @throws dev.idempotency.IdempotencyKeyInProgressException if another consumer holds
	 * the key right now and the store cannot wait for it
	 */
	Claim claim(ProcessedMessage message);

	/**
	 * Return whether the key has been processed (committed) in the scope.
	 * @param scope the scope
	 * @param key the key, fitted to the store
	 * @return whether a processed record of the key exists
	 */
	boolean isProcessed(String scope, String key);

	/**
	 * Return whether claims join the listener's database transaction, so that its
	 * rollback undoes them.
	 * @return {@code true} for a transactional store
	 */
	default boolean joinsTransaction() {
		return true;
	}

	/**
	 * Return a short name of the store for meters and logs, such as {@code jdbc}.
	 * @return the store name
	 */
	default String name() {
		return getClass().getSimpleName();
	}

}
