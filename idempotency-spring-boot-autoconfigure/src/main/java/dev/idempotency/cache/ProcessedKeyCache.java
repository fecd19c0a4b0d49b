package dev.idempotency.cache;

import java.util.List;

/**
 * A cache of processed keys in front of the {@code ProcessedMessageStore}. It is only a
 * hint: a hit skips the listener without touching the store; a miss, an error or a
 * timeout sends the message down the store's path, which decides.
 */
public interface ProcessedKeyCache {

	/**
	 * Return whether the key is known to be processed. Never throws: any failure is a
	 * miss.
	 * @param scope the scope
	 * @param key the key, fitted to the store
	 * @return {@code true} only if the cache knows the key as processed
	 */
	boolean isProcessed(String scope, String key);

	/**
	 * Look up the keys of a batch. The default asks one key after the other; caches that
	 * can should ask for all of them in one round trip.
	 * @param scope the scope
	 * @param keys the keys, fitted to the store
	 * @return for each key, whether the cache knows it as processed
	 */
	default boolean[] areProcessed(String scope, List<String> keys) {
		boolean[] processed = new boolean[keys.size()];
		for (int i = 0; i < processed.length; i++) {
			processed[i] = isProcessed(scope, keys.get(i));
		}
		return processed;
	}

	/**
	 * Remember that the key was processed. Called only after the transaction that
	 * recorded it committed. Never throws and never waits for the cache.
	 * @param scope the scope
	 * @param key the key, fitted to the store
	 */
	void markProcessed(String scope, String key);

}
