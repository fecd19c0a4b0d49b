package dev.idempotency.outbox;

import java.util.LinkedHashMap;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * An event to publish through the {@link Outbox}.
 *
 * @param topic the Kafka topic
 * @param key the record key (the aggregate id); events of one key are published in order
 * @param payload a {@code String}, {@code byte[]}, or an object serialized to JSON
 * @param headers headers to send with the record, as UTF-8 text
 * @param type the event type, sent as the {@code X-Event-Type} header when set
 * @param aggregateType the aggregate type, sent as the {@code X-Aggregate-Type} header
 * when set
 */
public record OutboxEvent(String topic, @Nullable String key, Object payload, Map<String, String> headers,
		@Nullable String type, @Nullable String aggregateType) {

	public OutboxEvent {
		Assert.hasText(topic, "An outbox event needs a topic");
		Assert.notNull(payload, "An outbox event needs a payload");
		headers = Map.copyOf(headers);
	}

	/**
	 * Start building an event.
	 * @param topic the Kafka topic
	 * @param key the record key (the aggregate id)
	 * @param payload the payload
	 * @return a builder
	 */
	public static Builder builder(String topic, @Nullable String key, Object payload) {
		return new Builder(topic, key, payload);
	}

	/**
	 * Builds an {@link OutboxEvent}.
	 */
	public static final class Builder {

		private final String topic;

		private final @Nullable String key;

		private final Object payload;

		private final Map<String, String> headers = new LinkedHashMap<>();

		private @Nullable String type;

		private @Nullable String aggregateType;

		private Builder(String topic, @Nullable String key, Object payload) {
			this.topic = topic;
			this.key = key;
			this.payload = payload;
		}

		public Builder header(String name, String value) {
			this.headers.put(name, value);
			return this;
		}

		public Builder type(String type) {
			this.type = type;
			return this;
		}

		public Builder aggregateType(String aggregateType) {
			this.aggregateType = aggregateType;
			return this;
		}

		public OutboxEvent build() {
			return new OutboxEvent(this.topic, this.key, this.payload, this.headers, this.type, this.aggregateType);
		}

	}

}
