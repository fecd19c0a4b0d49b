package dev.idempotency.internal.outbox;

import java.time.Instant;
import java.util.Map;
import java.util.UUID;

import org.jspecify.annotations.Nullable;

/**
 * An event the relay claimed, as read back from the outbox table.
 *
 * @param claim the claim that took it, with the other events of its batch
 */
record OutboxRecord(long claim, long id, UUID eventId, @Nullable String key, String topic, byte[] payload,
		Map<String, String> headers, @Nullable String type, @Nullable String aggregateType, int attempts,
		Instant createdAt) {
}
