package dev.idempotency.internal.consumer;

import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.MissingKeyPolicy;
import dev.idempotency.internal.key.RecordCoordinates;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * What the record and batch paths do with a record whose key is missing or blank, under
 * {@code idempotency.missing-key}: its coordinates stand in for the key, or it is skipped
 * (acknowledged, with a warning), or rejected (an {@link IdempotencyKeyMissingException},
 * which names the record, for the error handler).
 */
final class MissingKeys {

	private static final Log logger = LogFactory.getLog(MissingKeys.class);

	private final MissingKeyPolicy policy;

	MissingKeys(MissingKeyPolicy policy) {
		this.policy = policy;
	}

	/**
	 * Return the key that stands in for the missing one, or {@code null} when the record
	 * is skipped or rejected (a skip is logged here; a rejection is the caller's to throw).
	 */
	@Nullable String keyFor(ConsumerRecord<?, ?> record, ListenerMethod method) {
		switch (this.policy) {
			case RECORD_COORDINATES:
				return RecordCoordinates.keyOf(record);
			case SKIP:
				logger.warn("Skipped record " + RecordCoordinates.describe(record) + " without idempotency key in "
						+ method.name() + " (idempotency.missing-key=skip)");
				return null;
			default:
				return null;
		}
	}

	/** Whether a record without key is rejected rather than skipped. */
	boolean rejects() {
		return this.policy == MissingKeyPolicy.REJECT;
	}

	IdempotencyKeyMissingException rejection(ConsumerRecord<?, ?> record, ListenerMethod method) {
		return new IdempotencyKeyMissingException(record.topic(), record.partition(), record.offset(), method.name());
	}

}
