package dev.idempotency.outbox;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

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

	// Kafka's rules for a topic name
	private static final Pattern TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");

	// the width of the outbox table's aggregate_id, type and aggregate_type columns
	private static final int MAX_COLUMN_CHARACTERS = 255;

	/**
	 * Check the event: one the relay could never send, or could only send changed, is
	 * refused here, in the publisher's transaction, rather than written to die after its
	 * attempts and block the later events of its key.
	 * @throws IllegalArgumentException if the topic is not a legal Kafka topic name, the
	 * key, type or aggregate type is longer than 255 characters, or the key, type,
	 * aggregate type or a header holds a NUL or a lone surrogate (PostgreSQL text holds no
	 * NUL, and UTF-8 has no form for a lone surrogate)
	 */
	public OutboxEvent {
		Assert.hasText(topic, "An outbox event needs a topic");
		Assert.isTrue(TOPIC.matcher(topic).matches() && !topic.equals(".") && !topic.equals(".."),
				() -> "An outbox event's topic must be a legal Kafka topic name (1 to 249 of a-z, A-Z, 0-9, '.', "
						+ "'_', '-', and not '.' or '..'): '" + topic + "'");
		Assert.notNull(payload, "An outbox event needs a payload");
		requireStorable("key", key, MAX_COLUMN_CHARACTERS);
		requireStorable("type", type, MAX_COLUMN_CHARACTERS);
		requireStorable("aggregate type", aggregateType, MAX_COLUMN_CHARACTERS);
		headers = Map.copyOf(headers);
		headers.forEach((name, value) -> {
			requireStorable("header name " + name, name, Integer.MAX_VALUE);
			requireStorable("header " + name, value, Integer.MAX_VALUE);
		});
	}

	private static void requireStorable(String what, @Nullable String text, int maxCharacters) {
		if (text == null) {
			return;
		}
		Assert.isTrue(text.codePointCount(0, text.length()) <= maxCharacters,
				() -> "An outbox event's " + what + " must be at most " + maxCharacters + " characters long");
		for (int i = 0; i < text.length(); i++) {
			char c = text.charAt(i);
			boolean lone = Character.isHighSurrogate(c)
					? i + 1 == text.length() || !Character.isLowSurrogate(text.charAt(++i))
					: Character.isLowSurrogate(c);
			Assert.isTrue(c != 0 && !lone, () -> "An outbox event's " + what
					+ " must hold no NUL character and no lone surrogate: the outbox table could not store it as it is");
		}
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
