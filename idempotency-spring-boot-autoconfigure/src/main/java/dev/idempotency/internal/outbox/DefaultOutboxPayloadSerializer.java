package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.OutboxPayloadSerializer;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

import org.jspecify.annotations.Nullable;

/**
 * Sends a {@code String} as UTF-8, a {@code byte[]} as it is, and any other object through
 * the JSON writer, when there is one.
 */
public final class DefaultOutboxPayloadSerializer implements OutboxPayloadSerializer {

	private final @Nullable Function<Object, byte[]> json;

	/**
	 * Create a serializer.
	 * @param json writes an object as JSON bytes, or {@code null} when the application has
	 * no JSON mapper
	 */
	public DefaultOutboxPayloadSerializer(@Nullable Function<Object, byte[]> json) {
		this.json = json;
	}

	@Override
	public byte[] serialize(Object payload) {
		if (payload instanceof byte[] bytes) {
			return bytes;
		}
		if (payload instanceof String text) {
			return text.getBytes(StandardCharsets.UTF_8);
		}
		if (this.json == null) {
			throw new IllegalArgumentException("Cannot serialize an outbox payload of type "
					+ payload.getClass().getName() + ": the application has no Jackson JsonMapper. Publish a String "
					+ "or byte[], or declare an OutboxPayloadSerializer bean");
		}
		try {
			return this.json.apply(payload);
		}
		catch (RuntimeException ex) {
			throw new IllegalArgumentException(
					"Cannot serialize an outbox payload of type " + payload.getClass().getName() + " as JSON", ex);
		}
	}

}
