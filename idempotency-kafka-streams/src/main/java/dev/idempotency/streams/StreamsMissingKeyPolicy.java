package dev.idempotency.streams;

/**
 * What the deduplicating processor does with a record for which the key extractor
 * returned no key (no header, a {@code null} record key or field). Every such record is
 * counted with {@code reason=missing-key}, whatever the policy.
 */
public enum StreamsMissingKeyPolicy {

	/**
	 * Forward the record without deduplicating it.
	 */
	FORWARD,

	/**
	 * Drop the record and log a warning naming its topic, partition and offset.
	 */
	DROP,

	/**
	 * Throw {@link IdempotencyKeyExtractionException}; the application's
	 * {@code processing.exception.handler} decides the record's fate (by default the
	 * stream thread stops and the record is processed again after a restart).
	 */
	FAIL

}
