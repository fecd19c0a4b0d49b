package dev.idempotency.internal.outbox;

import dev.idempotency.internal.store.TableName;

/**
 * The statements of the outbox on its table (and the table of its claims, named after
 * it), with the table name formatted in.
 *
 * @param insert inserts an event, in the publisher's transaction
 * @param claim claims a batch of due events
 * @param claimTurn takes the claim turn, until the transaction ends
 * @param deleteSent deletes sent events and gives back their claims
 * @param markSent marks sent events and gives back their claims
 * @param fail records failed attempts
 * @param release gives back every claim of a relay instance
 * @param releaseClaims gives back claims of a relay instance
 * @param purgeClaims deletes claims whose lease ended long ago
 * @param requeue puts dead events back in line
 * @param listDead lists dead events
 * @param discardDead deletes a dead event
 * @param purge deletes events sent long ago
 * @param statsPlan keeps the counts of {@code stats} off bitmap scans, until the
 * transaction ends
 * @param stats counts the pending and dead events, each up to a bound, and reads the
 * oldest pending one
 * @param countDead counts every dead event
 * @param oldestPendingAge reads the age of the oldest pending event
 */
record OutboxStatements(String insert, String claim, String claimTurn, String deleteSent, String markSent,
		String fail, String release, String releaseClaims, String purgeClaims, String requeue, String listDead,
		String discardDead, String purge, String statsPlan, String stats, String countDead,
		String oldestPendingAge) {

	// The id orders the events of a key, but it is taken at insert, not at commit. So that
	// ids follow commit order, publishers of one key take turns: the insert first takes a
	// lock on the key (two-int advisory lock, held until the transaction ends; a null key
	// takes none), then draws the id, all in one statement. The two-int form never
	// collides with the relay's one-bigint claim lock.
	private static final String INSERT = """
			WITH key_turn AS (SELECT pg_advisory_xact_lock(?, hashtext(?::text)))
			INSERT INTO %s (event_id, aggregate_type, aggregate_id, type, topic, payload, headers)
			SELECT ?::uuid, ?, ?, ?, ?, ?::bytea, jsonb_object(?::text[], ?::text[]) FROM key_turn
			""";

	// One relay instance claims at a time (a transaction-scoped advisory lock), so that
	// each claim sees every other instance's committed claims. A claim takes the due events
	// in id order whose key no live claim holds and whose key has no older event that is
	// dead, backing off or leased (by an earlier version of the relay, on the event row),
	// and records their keys, as hashes, in one row of the claims table: it writes nothing
	// on the events. Older claimable events of a key come first in id order and are taken
	// in the same batch. Only dead, failed (or held back or re-queued: last_error is set)
	// or leased events can block, and the check names that condition so that it runs on
	// the small partial index of them. An expired claim that held a key taken now gives
	// up that key (and is deleted once it holds none), so that its owner can no longer
	// record failures for the key's events, but still can for the events of its other
	// keys. The expired claims are locked first, skipping those locked by their owner's
	// completion, failure record or release, which is deleting them: the claim never
	// waits for a row lock, so it deadlocks with none of them.
	private static final String CLAIM = """
			WITH busy AS (
			    SELECT unnest(key_hashes) AS key_hash FROM %1$s_claims WHERE lease_until >= now()),
			due AS (
			    SELECT o.id, hashtext(coalesce(o.aggregate_id, o.id::text)) AS key_hash, o.event_id, o.aggregate_id,
			        o.topic, o.payload, o.type, o.aggregate_type, o.attempts, o.created_at, o.headers
			    FROM %1$s o
			    WHERE o.status = 'PENDING' AND o.next_attempt_at <= now()
			      AND (o.lease_until IS NULL OR o.lease_until < now())
			      AND hashtext(coalesce(o.aggregate_id, o.id::text)) NOT IN (SELECT key_hash FROM busy)
			      AND NOT EXISTS (
			          SELECT 1 FROM %1$s older
			          WHERE older.aggregate_id = o.aggregate_id AND older.id < o.id
			            AND (older.status = 'DEAD'
			                 OR (older.status = 'PENDING' AND (older.last_error IS NOT NULL OR older.lease_owner IS NOT NULL)))
			            AND (older.status = 'DEAD' OR older.next_attempt_at > now() OR older.lease_until >= now()))
			    ORDER BY o.id
			    LIMIT %2$d),
			held AS (
			    SELECT array_agg(DISTINCT key_hash) AS key_hashes FROM due HAVING count(*) > 0),
			expired AS (
			    SELECT c.id, ARRAY(SELECT h FROM unnest(c.key_hashes) AS h WHERE h <> ALL (held.key_hashes)) AS kept
			    FROM %1$s_claims c CROSS JOIN held
			    WHERE c.lease_until < now() AND c.key_hashes && held.key_hashes
			    FOR UPDATE OF c SKIP LOCKED),
			taken_over AS (
			    UPDATE %1$s_claims c SET key_hashes = expired.kept FROM expired
			    WHERE c.id = expired.id AND cardinality(expired.kept) > 0),
			emptied AS (
			    DELETE FROM %1$s_claims c USING expired
			    WHERE c.id = expired.id AND cardinality(expired.kept) = 0),
			claim AS (
			    INSERT INTO %1$s_claims (lease_owner, lease_until, key_hashes)
			    SELECT ?, now() + make_interval(secs => ?), key_hashes FROM held
			    RETURNING id)
			SELECT claim.id AS claim_id, due.id, event_id, aggregate_id, topic, payload, type, aggregate_type, attempts,
			    created_at,
			    CASE WHEN headers <> '{}' THEN ARRAY(SELECT key FROM jsonb_each_text(headers)) END AS header_names,
			    CASE WHEN headers <> '{}' THEN ARRAY(SELECT value FROM jsonb_each_text(headers)) END AS header_values
			FROM due CROSS JOIN claim
			""";

	// The claim must walk the pending index in id order and stop after a batch. On a
	// table whose statistics lag behind a burst of inserts (a fresh backlog), the planner
	// otherwise reads every pending row, checks each against the order condition and
	// sorts them all: 180 ms instead of 20 ms for 500 of 20,000 rows. Sorting is switched
	// off for the claim's transaction only, in the statement that takes the turn.
	private static final String LOCK = "SELECT pg_advisory_xact_lock(?), set_config('enable_sort', 'off', true)";

	// Sent events are completed whoever holds their keys now: they were acknowledged. The
	// claim is given back in the same statement, once its events are.
	private static final String DELETE_SENT = """
			WITH sent AS (DELETE FROM %1$s WHERE id = ANY(?) RETURNING id),
			released AS (DELETE FROM %1$s_claims WHERE id = ANY(?) AND lease_owner = ?)
			SELECT count(*) FROM sent
			""";

	private static final String MARK_SENT = """
			WITH sent AS (
			    UPDATE %1$s SET status = 'SENT', sent_at = now(), lease_owner = NULL, lease_until = NULL
			    WHERE id = ANY(?) RETURNING id),
			released AS (DELETE FROM %1$s_claims WHERE id = ANY(?) AND lease_owner = ?)
			SELECT count(*) FROM sent
			""";

	private static final String FAIL = """
			UPDATE %s SET attempts = attempts + CASE WHEN failed.attempted THEN 1 ELSE 0 END,
			    last_error = failed.error,
			    status = CASE WHEN failed.attempted AND attempts + 1 >= ? THEN 'DEAD' ELSE 'PENDING' END,
			    next_attempt_at = now() + make_interval(secs => failed.delay_seconds),
			    lease_owner = NULL, lease_until = NULL
			FROM unnest(?::bigint[], ?::text[], ?::float8[], ?::boolean[])
			    AS failed (id, error, delay_seconds, attempted)
			WHERE %1$s.id = failed.id AND %1$s.status = 'PENDING'
			  AND EXISTS (
			      SELECT 1 FROM %1$s_claims c
			      WHERE c.id = ANY(?::bigint[]) AND c.lease_owner = ?
			        AND hashtext(coalesce(%1$s.aggregate_id, %1$s.id::text)) = ANY(c.key_hashes))
			RETURNING %1$s.id, status
			""";

	private static final String RELEASE = "DELETE FROM %s_claims WHERE lease_owner = ?";

	private static final String RELEASE_CLAIMS = "DELETE FROM %s_claims WHERE id = ANY(?) AND lease_owner = ?";

	// Claims that ended long ago without a claim taking over their keys (their relay
	// stopped, and its events were sent by it or by no one since).
	private static final String PURGE_CLAIMS = """
			DELETE FROM %s_claims WHERE lease_until < now() - make_interval(secs => ?)
			""";

	// A re-queued event is due at once, as a new one is (not at the re-queue's clock,
	// which a claim's may read behind). It keeps its last error: it must still block the
	// later events of its key, which only events with last_error set (or leased) do, until
	// a claim takes it.
	private static final String REQUEUE = """
			UPDATE %s SET status = 'PENDING', attempts = 0, next_attempt_at = '-infinity',
			    last_error = coalesce(last_error, 'Re-queued')
			WHERE status = 'DEAD' AND (?::uuid IS NULL OR event_id = ?::uuid)
			""";

	private static final String LIST_DEAD = """
			SELECT event_id, topic, aggregate_id, type, attempts, last_error, created_at FROM %s
			WHERE status = 'DEAD' ORDER BY id LIMIT ?
			""";

	private static final String DISCARD_DEAD = "DELETE FROM %s WHERE status = 'DEAD' AND event_id = ?";

	private static final String PURGE = """
			DELETE FROM %s WHERE status = 'SENT' AND sent_at < now() - make_interval(secs => ?)
			""";

	// Each count stops after a bound of rows, so that reading the statistics (every 10 s,
	// and on every health check) costs the same with a backlog of ten million events as
	// with ten: the pending events are counted on the pending index, the dead ones on the
	// index of dead events (the index of blocking events also holds every pending event
	// that failed or was held back), and the oldest pending event is the head of the
	// pending index. Only a plan that stops can honour the bound: a bitmap scan reads every
	// entry of its index before the limit applies (0.4 to 1 s for 5 million pending events,
	// instead of 2 to 20 ms), and the planner picks one while the table's statistics lag
	// behind a burst of inserts, which is when a backlog forms. Bitmap scans are switched
	// off for the statistics' transaction only, in the statement before.
	private static final String STATS_PLAN = "SELECT set_config('enable_bitmapscan', 'off', true)";

	private static final String STATS = """
			SELECT (SELECT count(*) FROM (SELECT FROM %1$s WHERE status = 'PENDING' LIMIT %2$d) AS p) AS pending,
			       (SELECT count(*) FROM (SELECT FROM %1$s WHERE status = 'DEAD' LIMIT %2$d) AS d) AS dead,
			       (SELECT created_at FROM %1$s WHERE status = 'PENDING' ORDER BY id LIMIT 1) AS oldest
			""";

	// every dead event, for the dead-letter operations, on the index of dead events
	private static final String COUNT_DEAD = "SELECT count(*) FROM %s WHERE status = 'DEAD'";

	// The pending event with the lowest id: the first written (id and created_at are both
	// taken by the insert), found at the head of the pending index, whatever the backlog.
	// Its age is measured on the database's clock, so that a skewed application clock
	// does not shift it.
	private static final String OLDEST_PENDING_AGE = """
			SELECT extract(epoch FROM clock_timestamp() - created_at) FROM %s
			WHERE status = 'PENDING' ORDER BY id LIMIT 1
			""";

	/**
	 * Format the statements for a table.
	 * @param table the outbox table, validated
	 * @param batchSize the most events one claim takes
	 * @param countLimit the most events {@code stats} counts of each status
	 * @return the statements on the table
	 */
	static OutboxStatements on(TableName table, int batchSize, int countLimit) {
		String name = table.qualified();
		// the batch size is formatted in: with a bound LIMIT, the driver's generic plan
		// cannot count on a small limit and may scan instead of walking the index
		String claim = CLAIM.formatted(name, batchSize);
		return new OutboxStatements(INSERT.formatted(name), claim, LOCK, DELETE_SENT.formatted(name),
				MARK_SENT.formatted(name), FAIL.formatted(name), RELEASE.formatted(name), RELEASE_CLAIMS.formatted(name),
				PURGE_CLAIMS.formatted(name), REQUEUE.formatted(name), LIST_DEAD.formatted(name),
				DISCARD_DEAD.formatted(name), PURGE.formatted(name), STATS_PLAN,
				STATS.formatted(name, countLimit), COUNT_DEAD.formatted(name), OLDEST_PENDING_AGE.formatted(name));
	}

}
