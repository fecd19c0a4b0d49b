package dev.idempotency.store;

/**
 * Records which messages have been processed. Declare a bean of this type to replace the
 * JDBC store.
 * <p>
 * A transactional store claims inside the transaction in which the listener method runs,
 * so that the claim commits or rolls back together with the method's work.
 */
public interface ProcessedMessageStore {

	/**
	 * Claim the message's key in its scope.
	 * @param message the message to claim
	 * @return {@code true} if the key was new and is now claimed by the caller;
	 * {@code false} if it had already been processed
	 */
	boolean claim(ProcessedMessage message);

	/**
	 * Return whether the key has been processed (committed) in the scope.
	 * @param scope the scope
	 * @param key the key, fitted to the store
	 * @return whether a processed record of the key exists
	 */
	boolean isProcessed(String scope, String key);

	/**
	 * Return a short name of the store for meters and logs, such as {@code jdbc}.
	 * @return the store name
	 */
	default String name() {
		return getClass().getSimpleName();
	}

}
