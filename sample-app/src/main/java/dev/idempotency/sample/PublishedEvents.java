package dev.idempotency.sample;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.kafka.core.ConsumerFactory;

/**
 * Reads the events a topic holds, from its start to its end, without a consumer group:
 * the ids of the events published for each payment. A relay that sent an event twice
 * sent it with the same id; two ids for one payment are two events.
 */
final class PublishedEvents {

	private static final String EVENT_ID_HEADER = "X-Idempotency-Key";

	private final ConsumerFactory<String, String> consumers;

	private final JsonMapper json;

	PublishedEvents(ConsumerFactory<String, String> consumers, JsonMapper json) {
		this.consumers = consumers;
		this.json = json;
	}

	/**
	 * Return the ids of the events published for each payment, read from the records'
	 * {@code paymentId} and {@code X-Idempotency-Key} header.
	 * @param topic the topic
	 * @param timeout how long to read at most
	 * @return the event ids by payment
	 * @throws IllegalStateException if the end of the topic was not reached in time
	 */
	Map<UUID, Set<UUID>> eventIdsByPayment(String topic, Duration timeout) {
		Properties properties = new Properties();
		properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
		Map<UUID, Set<UUID>> eventIds = new HashMap<>();
		try (Consumer<String, String> consumer = this.consumers.createConsumer(null, "published-events", null,
				properties)) {
			List<TopicPartition> partitions = consumer.partitionsFor(topic)
				.stream()
				.map((partition) -> new TopicPartition(topic, partition.partition()))
				.toList();
			consumer.assign(partitions);
			consumer.seekToBeginning(partitions);
			Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
			long deadline = System.nanoTime() + timeout.toNanos();
			while (partitions.stream().anyMatch((partition) -> consumer.position(partition) < ends.get(partition))) {
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("Could not read " + topic + " to its end in " + timeout);
				}
				for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
					UUID payment = UUID.fromString(this.json.readTree(record.value()).path("paymentId").asString());
					eventIds.computeIfAbsent(payment, (key) -> new HashSet<>()).add(eventId(record));
				}
			}
		}
		return eventIds;
	}

	// a record without an id counts as an event of its own
	private static UUID eventId(ConsumerRecord<String, String> record) {
		Header header = record.headers().lastHeader(EVENT_ID_HEADER);
		return (header != null) ? UUID.fromString(new String(header.value(), StandardCharsets.UTF_8))
				: UUID.randomUUID();
	}

}
