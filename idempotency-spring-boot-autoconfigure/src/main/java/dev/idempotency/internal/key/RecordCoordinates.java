package dev.idempotency.internal.key;

import dev.idempotency.store.ProcessedMessage;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;

/**
 * The key of a record that carries none: {@code topic-partition-offset}. A record
 * republished to a dead-letter topic by spring-kafka's {@code DeadLetterPublishingRecoverer}
 * keeps the coordinates of the original record (its {@code kafka_dlt-original-*} headers),
 * so that replaying it from the dead-letter topic, or retrying it from a retry topic, is
 * recognized as the same message.
 */
public final class RecordCoordinates {

	static final String ORIGINAL_TOPIC = "kafka_dlt-original-topic";

	static final String ORIGINAL_PARTITION = "kafka_dlt-original-partition";

	static final String ORIGINAL_OFFSET = "kafka_dlt-original-offset";

	static final String ORIGINAL_CONSUMER_GROUP = "kafka_dlt-original-consumer-group";

	// the names of the same headers on records republished to retry topics
	static final String RETRY_ORIGINAL_TOPIC = "kafka_original-topic";

	static final String RETRY_ORIGINAL_PARTITION = "kafka_original-partition";

	static final String RETRY_ORIGINAL_OFFSET = "kafka_original-offset";

	private RecordCoordinates() {
	}

	/**
	 * Return the coordinates key of the record.
	 * @param record the record
	 * @return {@code topic-partition-offset} of the record, or of the original record when
	 * it came from a dead-letter topic
	 */
	public static String keyOf(ConsumerRecord<?, ?> record) {
		String original = original(record, ORIGINAL_TOPIC, ORIGINAL_PARTITION, ORIGINAL_OFFSET);
		if (original == null) {
			original = original(record, RETRY_ORIGINAL_TOPIC, RETRY_ORIGINAL_PARTITION, RETRY_ORIGINAL_OFFSET);
		}
		return (original != null) ? original : format(record.topic(), record.partition(), record.offset());
	}

	private static @Nullable String original(ConsumerRecord<?, ?> record, String topicHeader,
			String partitionHeader, String offsetHeader) {
		byte[] topic = firstValue(record, topicHeader);
		byte[] partition = firstValue(record, partitionHeader);
		byte[] offset = firstValue(record, offsetHeader);
		if (topic != null && partition != null && partition.length == Integer.BYTES && offset != null
				&& offset.length == Long.BYTES) {
			return format(new String(topic, StandardCharsets.UTF_8), ByteBuffer.wrap(partition).getInt(),
					ByteBuffer.wrap(offset).getLong());
		}
		return null;
	}

	/**
	 * Describe a record's coordinates for a log line or an exception message, as
	 * {@code topic-partition@offset}.
	 * @param topic the topic
	 * @param partition the partition
	 * @param offset the offset
	 * @return the description
	 */
	public static String describe(String topic, int partition, long offset) {
		return topic + "-" + partition + "@" + offset;
	}

	/**
	 * Describe a record's coordinates as {@code topic-partition@offset}.
	 * @param record the record
	 * @return the description
	 */
	public static String describe(ConsumerRecord<?, ?> record) {
		return describe(record.topic(), record.partition(), record.offset());
	}

	/**
	 * Describe the coordinates of a claimed message as {@code topic-partition@offset}.
	 * @param message the message
	 * @return the description
	 */
	public static String describe(ProcessedMessage message) {
		return describe(message.topic(), message.partition(), message.offset());
	}

	private static String format(String topic, int partition, long offset) {
		return topic + "-" + partition + "-" + offset;
	}

	/**
	 * Return the consumer group that first failed the record, for a record that a
	 * {@code DeadLetterPublishingRecoverer} republished to a retry or dead-letter topic.
	 * @param record the record
	 * @return the group of the original consumer, or {@code null}
	 */
	public static @Nullable String originalConsumerGroup(ConsumerRecord<?, ?> record) {
		byte[] group = firstValue(record, ORIGINAL_CONSUMER_GROUP);
		return (group != null && group.length > 0) ? new String(group, StandardCharsets.UTF_8) : null;
	}

	/**
	 * Return the topic of the record that first failed, for a record that a
	 * {@code DeadLetterPublishingRecoverer} republished to a retry or dead-letter topic.
	 * @param record the record
	 * @return the topic of the original record, or {@code null}
	 */
	public static @Nullable String originalTopic(ConsumerRecord<?, ?> record) {
		byte[] topic = firstValue(record, ORIGINAL_TOPIC);
		if (topic == null) {
			// retry topics name it so
			topic = firstValue(record, RETRY_ORIGINAL_TOPIC);
		}
		return (topic != null && topic.length > 0) ? new String(topic, StandardCharsets.UTF_8) : null;
	}

	// Each hop through a retry topic appends its own "original" headers: the first ones
	// name the record on the main topic.
	private static byte @Nullable [] firstValue(ConsumerRecord<?, ?> record, String name) {
		Iterator<Header> headers = record.headers().headers(name).iterator();
		return headers.hasNext() ? headers.next().value() : null;
	}

}
