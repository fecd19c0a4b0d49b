package dev.idempotency.outbox;

import java.util.UUID;

import org.jspecify.annotations.Nullable;

/**
 * Publishes events to Kafka if and only if the caller's database transaction commits.
 * <p>
 * {@code publish} writes the event to the outbox table in the current transaction (it
 * refuses to run without one); the relay publishes it after the commit, in order per key,
 * with the event id as the {@code X-Idempotency-Key} header, so that an
 * {@code @Idempotent} consumer applies a relayed retry once. An event published while an
 * {@code @Idempotent} listener or HTTP handler runs gets an id derived from the key being
 * handled, its topic and its position among the handling's events, so that running the
 * handling again publishes the same ids ({@code idempotency.outbox.derived-event-ids}).
 * <p>
 * Order per key is commit order: a transaction that publishes for a key waits until
 * every other open transaction that published for that key has ended.
 */
public interface Outbox {

	/**
	 * Publish an event.
	 * @param topic the Kafka topic
	 * @param key the record key: the aggregate id, which orders the events
	 * @param payload a {@code String}, {@code byte[]}, or an object serialized to JSON
	 * @return the event id, sent as the {@code X-Idempotency-Key} header
	 * @throws org.springframework.transaction.IllegalTransactionStateException if no
	 * transaction is active
	 */
	default UUID publish(String topic, @Nullable String key, Object payload) {
		return publish(OutboxEvent.builder(topic, key, payload).build());
	}

	/**
	 * Publish an event with headers, a type or an aggregate type.
	 * @param event the event
	 * @return the event id, sent as the {@code X-Idempotency-Key} header
	 * @throws org.springframework.transaction.IllegalTransactionStateException if no
	 * transaction is active
	 */
	UUID publish(OutboxEvent event);

}
