package dev.idempotency.internal.store;

/**
 * The statements of the {@link JdbcProcessedMessageStore} on its table, with the table
 * name formatted in.
 *
 * @param claim claims one key
 * @param claimFingerprinted claims one key and stores a payload fingerprint with it
 * @param claimAll claims the keys of a batch and returns the ones inserted, as one array
 * @param claimAllNew inserts the keys of a batch that are all new and counts them
 * @param exists tells whether a key was processed
 * @param leased reads which keys of a claim a lease-mode claim holds
 * @param unclaim deletes the claims of keys
 */
record ProcessedMessageStatements(String claim, String claimFingerprinted, String claimAll, String claimAllNew,
		String exists, String leased, String unclaim) {

	// The lock timeout bounds the wait of this statement only: it is set before the insert
	// and put back to what it was by the RETURNING clause of each inserted row, after its
	// wait, so that the listener's own statements keep their own setting. A duplicate
	// inserts nothing and leaves it set, but then the listener does not run in this
	// transaction.
	private static final String CLAIM = """
			WITH settings AS (
			    SELECT current_setting('lock_timeout') AS previous, set_config('lock_timeout', ?, true))
			INSERT INTO %s (consumer_group, idempotency_key, topic, partition, record_offset, processed_at)
			SELECT ?, ?, ?, ?, ?, now() FROM settings
			ON CONFLICT (consumer_group, idempotency_key) DO NOTHING
			RETURNING (SELECT set_config('lock_timeout', previous, true) FROM settings)
			""";

	// the same, with a payload fingerprint (a column of the lease migration, which only
	// fingerprinting listeners need)
	private static final String CLAIM_FINGERPRINTED = """
			WITH settings AS (
			    SELECT current_setting('lock_timeout') AS previous, set_config('lock_timeout', ?, true))
			INSERT INTO %s (consumer_group, idempotency_key, topic, partition, record_offset, processed_at,
			    fingerprint)
			SELECT ?, ?, ?, ?, ?, now(), ? FROM settings
			ON CONFLICT (consumer_group, idempotency_key) DO NOTHING
			RETURNING (SELECT set_config('lock_timeout', previous, true) FROM settings)
			""";

	// Keys are sorted before they are sent, so that two consumers claiming overlapping
	// batches take the index locks in the same order and cannot deadlock. The rows are
	// inserted by a CTE and the lock timeout is put back by the SELECT that aggregates them,
	// once every row is in: a RETURNING clause would put it back with the first row, and
	// the wait of every later key would go unbounded.
	private static final String INSERT_ALL = """
			WITH settings AS (
			    SELECT current_setting('lock_timeout') AS previous, set_config('lock_timeout', ?, true)),
			claimed AS (
			    INSERT INTO %s (consumer_group, idempotency_key, topic, partition, record_offset, processed_at)
			    SELECT ?, batch.idempotency_key, batch.topic, batch.partition, batch.record_offset, now()
			    FROM settings, unnest(?::varchar[], ?::varchar[], ?::int[], ?::bigint[])
			        AS batch (idempotency_key, topic, partition, record_offset)
			""";

	// the keys inserted, as one array
	private static final String CLAIM_ALL = INSERT_ALL + """
			    ON CONFLICT (consumer_group, idempotency_key) DO NOTHING
			    RETURNING idempotency_key)
			SELECT array_agg(idempotency_key), (SELECT set_config('lock_timeout', previous, true) FROM settings)
			FROM claimed
			""";

	// The same insert without ON CONFLICT, tried first in a savepoint: a plain insert of new
	// keys costs about 0.6 x the speculative insertion ON CONFLICT makes for every row.
	// A key already there (or inserted by a concurrent claim that commits first) fails it
	// with a unique violation; the savepoint is rolled back and CLAIM_ALL decides. When it
	// succeeds, every key is in, so it only counts them.
	private static final String CLAIM_ALL_NEW = INSERT_ALL + """
			    RETURNING 1)
			SELECT count(*), (SELECT set_config('lock_timeout', previous, true) FROM settings) FROM claimed
			""";

	// a lease-mode claim in progress or failed has a row, but was not processed (a NULL
	// status is a transactional claim, which exists only once committed)
	private static final String EXISTS = """
			SELECT EXISTS (SELECT 1 FROM %s WHERE consumer_group = ? AND idempotency_key = ?
			    AND (status IS NULL OR status = 'COMPLETED'))
			""";

	// A key held by a lease-mode claim of the same scope, in progress or failed, is not a
	// processed message: read only after a claim found its key taken. A key with no row at
	// all was held by a lease-mode claim released since the claim's insert met it (a
	// transactional claim's row is only deleted past the retention): it is not processed
	// either.
	private static final String LEASED = """
			SELECT claimed.idempotency_key,
			    CASE WHEN processed.idempotency_key IS NULL THEN 'RELEASED' ELSE processed.status END
			FROM unnest(?::varchar[]) AS claimed (idempotency_key)
			LEFT JOIN %s processed
			    ON processed.consumer_group = ? AND processed.idempotency_key = claimed.idempotency_key
			WHERE processed.idempotency_key IS NULL OR processed.status IN ('IN_PROGRESS', 'FAILED')
			""";

	private static final String UNCLAIM = """
			DELETE FROM %s WHERE consumer_group = ? AND idempotency_key = ANY(?)
			""";

	/**
	 * Format the statements for a table.
	 * @param table the table, validated
	 * @return the statements on the table
	 */
	static ProcessedMessageStatements on(TableName table) {
		return new ProcessedMessageStatements(CLAIM.formatted(table.qualified()),
				CLAIM_FINGERPRINTED.formatted(table.qualified()), CLAIM_ALL.formatted(table.qualified()),
				CLAIM_ALL_NEW.formatted(table.qualified()), EXISTS.formatted(table.qualified()),
				LEASED.formatted(table.qualified()), UNCLAIM.formatted(table.qualified()));
	}

}
