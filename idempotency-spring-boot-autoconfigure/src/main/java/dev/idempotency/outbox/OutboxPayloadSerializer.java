package dev.idempotency.outbox;

/**
 * Turns an event payload into the bytes of the Kafka record value. Declare a bean of this
 * type to replace the default, which sends a {@code String} as UTF-8, a {@code byte[]} as
 * it is, and any other object as JSON with the application's Jackson {@code JsonMapper}.
 */
@FunctionalInterface
public interface OutboxPayloadSerializer {

	/**
	 * Serialize a payload.
	 * @param payload the payload
	 * @return its bytes
	 * @throws IllegalArgumentException if the payload cannot be serialized
	 */
	byte[] serialize(Object payload);

}
