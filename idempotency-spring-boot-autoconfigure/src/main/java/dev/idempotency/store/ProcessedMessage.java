package dev.idempotency.store;

/**
 * A message whose key is to be claimed: the scope and key that identify it, and the
 * coordinates of the record it arrived in (kept for diagnostics).
 *
 * @param scope the scope in which the key is unique (the consumer group by default)
 * @param key the idempotency key, already fitted to the store
 * @param topic the topic of the record
 * @param partition the partition of the record
 * @param offset the offset of the record
 */
public record ProcessedMessage(String scope, String key, String topic, int partition, long offset) {
}
