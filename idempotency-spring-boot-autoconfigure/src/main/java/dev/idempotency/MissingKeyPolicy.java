package dev.idempotency;

/**
 * What to do with a record for which no idempotency key could be resolved.
 */
public enum MissingKeyPolicy {

	/**
	 * Use the record's coordinates, {@code topic-partition-offset}, as its key. For a record
	 * consumed from a dead-letter topic, the coordinates of the original record are used
	 * (from the {@code kafka_dlt-original-*} headers), so a replay is recognized.
	 */
	RECORD_COORDINATES,

	/**
	 * Throw {@link dev.idempotency.IdempotencyKeyMissingException} without invoking the
	 * listener; the container's error handler decides the record's fate.
	 */
	REJECT,

	/**
	 * Log a warning and acknowledge the record without invoking the listener.
	 */
	SKIP

}
