package dev.idempotency.internal.key;

import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;

/**
 * Root object of an {@code @Idempotent(key = "...")} expression.
 */
public final class KeyExpressionRoot {

	private final ConsumerRecord<?, ?> record;

	private final @Nullable Object payload;

	private @Nullable Map<String, String> headers;

	KeyExpressionRoot(ConsumerRecord<?, ?> record, @Nullable Object payload) {
		this.record = record;
		this.payload = payload;
	}

	/**
	 * Return the Kafka record.
	 * @return the record
	 */
	public ConsumerRecord<?, ?> getRecord() {
		return this.record;
	}

	/**
	 * Return the payload the listener method receives, or the record value.
	 * @return the payload
	 */
	public @Nullable Object getPayload() {
		return this.payload;
	}

	/**
	 * Return the record headers, each mapped to the UTF-8 text of its last value.
	 * @return the headers
	 */
	public Map<String, String> getHeaders() {
		Map<String, String> result = this.headers;
		if (result == null) {
			result = StreamSupport.stream(this.record.headers().spliterator(), false)
				.filter((header) -> header.value() != null)
				.collect(Collectors.toMap(Header::key, (header) -> HeaderKeys.text(header.value()), (a, b) -> b));
			this.headers = result;
		}
		return result;
	}

	/**
	 * Return the record key.
	 * @return the record key
	 */
	public @Nullable Object getKey() {
		return this.record.key();
	}

	/**
	 * Return the topic the record was consumed from.
	 * @return the topic
	 */
	public String getTopic() {
		return this.record.topic();
	}

	/**
	 * Return the partition the record was consumed from.
	 * @return the partition
	 */
	public int getPartition() {
		return this.record.partition();
	}

	/**
	 * Return the offset of the record.
	 * @return the offset
	 */
	public long getOffset() {
		return this.record.offset();
	}

}
