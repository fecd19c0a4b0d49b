package dev.idempotency.key;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;

/**
 * The key of a record that carries none: {@code topic-partition-offset}. A record
 * republished to a dead-letter topic by spring-kafka's {@code DeadLetterPublishingRecoverer}
 * keeps the coordinates of the original record (its {@code kafka_dlt-original-*} headers),
 * so that replaying it from the dead-letter topic is recognized as the same message.
 */
public final class RecordCoordinates {

	static final String ORIGINAL_TOPIC = "kafka_dlt-original-topic";

	static final String ORIGINAL_PARTITION = "kafka_dlt-original-partition";

	static final String ORIGINAL_OFFSET = "kafka_dlt-original-offset";

	private RecordCoordinates() {
	}

	/**
	 * Return the coordinates key of the record.
	 * @param record the record
	 * @return {@code topic-partition-offset} of the record, or of the original record when
	 * it came from a dead-letter topic
	 */
	public static String keyOf(ConsumerRecord<?, ?> record) {
		byte[] topic = lastValue(record, ORIGINAL_TOPIC);
		byte[] partition = lastValue(record, ORIGINAL_PARTITION);
		byte[] offset = lastValue(record, ORIGINAL_OFFSET);
		if (topic != null && partition != null && partition.length == Integer.BYTES && offset != null
				&& offset.length == Long.BYTES) {
			return format(new String(topic, StandardCharsets.UTF_8), ByteBuffer.wrap(partition).getInt(),
					ByteBuffer.wrap(offset).getLong());
		}
		return format(record.topic(), record.partition(), record.offset());
	}

	private static String format(String topic, int partition, long offset) {
		return topic + "-" + partition + "-" + offset;
	}

	private static byte @Nullable [] lastValue(ConsumerRecord<?, ?> record, String name) {
		Header header = record.headers().lastHeader(name);
		return (header != null) ? header.value() : null;
	}

}
