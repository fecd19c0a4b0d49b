package dev.idempotency.internal.consumer;

import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.store.JdbcProcessedKeyLookup;
import dev.idempotency.metrics.DecisionSource;
import org.jspecify.annotations.Nullable;

/**
 * The hint a listener's plan asks before the claim: whether the record's key is known to
 * be processed, so that the duplicate is skipped without a transaction. Only a hint: a
 * key not found (or any failure) goes to the claim, which decides.
 */
@FunctionalInterface
interface RecordLookup {

	/** No lookup: the claim decides (a listener whose duplicate claim must read its row). */
	RecordLookup NONE = (record) -> null;

	/**
	 * Look the record's key up.
	 * @param record the record and its key
	 * @return where the key was found processed, or {@code null} when it was not
	 */
	@Nullable DecisionSource processed(RecordInvocation record);

	/**
	 * The Redis cache, asked once per poll for all its keys.
	 */
	static RecordLookup cache(ProcessedKeyCache cache, IdempotencyKeyResolver resolver) {
		return (record) -> PollPrefetch.isProcessed(cache, resolver, record.method(), record.record(),
				record.message().scope(), record.message().key()) ? DecisionSource.CACHE : null;
	}

	/**
	 * The store's table, asked once per poll for all its keys, while recent polls found
	 * some (see {@link PollLookupGate}).
	 */
	static RecordLookup store(JdbcProcessedKeyLookup lookup, IdempotencyKeyResolver resolver) {
		return (record) -> PollPrefetch.isProcessed(lookup, resolver, record.method(), record.record(),
				record.message().scope(), record.message().key()) ? DecisionSource.STORE : null;
	}

}
