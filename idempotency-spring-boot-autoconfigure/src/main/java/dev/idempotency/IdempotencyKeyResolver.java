package dev.idempotency;

import org.jspecify.annotations.Nullable;

/**
 * Strategy that resolves the idempotency key of an inbound record. Declare a bean of this
 * type to replace the default resolution (the {@link Idempotent#key() key expression},
 * then the key header).
 * <p>
 * Returning {@code null} or a blank string means that the record carries no key; the
 * configured missing-key policy then decides (record coordinates, reject or skip).
 * Keys longer than the store's column are stored as a SHA-256 digest.
 */
@FunctionalInterface
public interface IdempotencyKeyResolver {

	/**
	 * Resolve the idempotency key of the given message.
	 * @param message the record being delivered and the listener it is delivered to
	 * @return the key, or {@code null} when the record carries none
	 */
	@Nullable String resolve(InboundMessage message);

}
