package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxStats;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

import javax.sql.DataSource;

import dev.idempotency.internal.store.TableName;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.PreparedStatementCreator;
import org.springframework.transaction.support.TransactionOperations;

/**
 * The SQL of the outbox: insert in the caller's transaction (publishers of one key take
 * turns, so that ids follow commit order); claim, complete, fail and re-queue for the
 * relay, each one statement (the claim in a short transaction of its own).
 */
public final class OutboxRepository {

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

	private static final String LOCK_NOT_AVAILABLE = "55P03";

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

	private static final String STATS = """
			SELECT count(*) FILTER (WHERE status = 'PENDING') AS pending,
			       count(*) FILTER (WHERE status = 'DEAD') AS dead,
			       min(created_at) FILTER (WHERE status = 'PENDING') AS oldest
			FROM %s WHERE status <> 'SENT'
			""";

	// The pending event with the lowest id: the first written (id and created_at are both
	// taken by the insert), found at the head of the pending index, whatever the backlog.
	// Its age is measured on the database's clock, so that a skewed application clock
	// does not shift it.
	private static final String OLDEST_PENDING_AGE = """
			SELECT extract(epoch FROM clock_timestamp() - created_at) FROM %s
			WHERE status = 'PENDING' ORDER BY id LIMIT 1
			""";

	private final JdbcTemplate jdbc;

	private final TransactionOperations transactions;

	private final long lockKey;

	private final int publishLockClass;

	private final String insertSql;

	private final String claimSql;

	private final String deleteSentSql;

	private final String markSentSql;

	private final String failSql;

	private final String releaseSql;

	private final String releaseClaimsSql;

	private final String purgeClaimsSql;

	private final String requeueSql;

	private final String listDeadSql;

	private final String discardDeadSql;

	private final String purgeSql;

	private final String statsSql;

	private final String oldestPendingAgeSql;

	/**
	 * Create a repository.
	 * @param jdbc the template on the application's {@code DataSource}
	 * @param transactions runs the claim in a short transaction of its own
	 * @param table the outbox table, validated
	 * @param batchSize the most events one claim takes
	 */
	public OutboxRepository(JdbcTemplate jdbc, TransactionOperations transactions, TableName table, int batchSize) {
		this.jdbc = jdbc;
		this.transactions = transactions;
		String name = table.qualified();
		this.lockKey = ("idempotency-outbox:" + name).hashCode();
		this.publishLockClass = ("idempotency-outbox-publish:" + name).hashCode();
		this.insertSql = INSERT.formatted(name);
		// the batch size is formatted in: with a bound LIMIT, the driver's generic plan
		// cannot count on a small limit and may scan instead of walking the index
		this.claimSql = CLAIM.formatted(name, batchSize);
		this.deleteSentSql = DELETE_SENT.formatted(name);
		this.markSentSql = MARK_SENT.formatted(name);
		this.failSql = FAIL.formatted(name);
		this.releaseSql = RELEASE.formatted(name);
		this.releaseClaimsSql = RELEASE_CLAIMS.formatted(name);
		this.purgeClaimsSql = PURGE_CLAIMS.formatted(name);
		this.requeueSql = REQUEUE.formatted(name);
		this.listDeadSql = LIST_DEAD.formatted(name);
		this.discardDeadSql = DISCARD_DEAD.formatted(name);
		this.purgeSql = PURGE.formatted(name);
		this.statsSql = STATS.formatted(name);
		this.oldestPendingAgeSql = OLDEST_PENDING_AGE.formatted(name);
	}

	void insert(UUID eventId, OutboxEvent event, byte[] payload) {
		try {
			this.jdbc.update(insertStatement(eventId, event, payload));
		}
		catch (DataAccessException ex) {
			if (ex.getMostSpecificCause() instanceof SQLException sqlException
					&& LOCK_NOT_AVAILABLE.equals(sqlException.getSQLState())) {
				throw new CannotAcquireLockException("Gave up after the transaction's lock_timeout waiting for "
						+ "another open transaction that published an event of the same key (topic " + event.topic()
						+ "); retry the transaction", ex);
			}
			throw ex;
		}
	}

	private PreparedStatementCreator insertStatement(UUID eventId, OutboxEvent event, byte[] payload) {
		String[] names = event.headers().keySet().toArray(String[]::new);
		String[] values = event.headers().values().toArray(String[]::new);
		return (connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.insertSql);
			statement.setInt(1, this.publishLockClass);
			statement.setString(2, event.key());
			statement.setObject(3, eventId);
			statement.setString(4, event.aggregateType());
			statement.setString(5, event.key());
			statement.setString(6, event.type());
			statement.setString(7, event.topic());
			statement.setBytes(8, payload);
			statement.setArray(9, connection.createArrayOf("text", names));
			statement.setArray(10, connection.createArrayOf("text", values));
			return statement;
		};
	}

	List<OutboxRecord> claim(String owner, Duration lease) {
		List<OutboxRecord> claimed = this.transactions.execute((status) -> {
			takeClaimTurn();
			return this.jdbc.query(this.claimSql, OutboxRepository::record, owner, lease.toMillis() / 1000.0);
		});
		List<OutboxRecord> ordered = new ArrayList<>((claimed != null) ? claimed : List.of());
		ordered.sort(Comparator.comparingLong(OutboxRecord::id));
		return ordered;
	}

	/**
	 * Wait for the claim turn and hold it until the current transaction ends: relay
	 * instances claim one at a time.
	 */
	/**
	 * Return the {@code DataSource} of the outbox table.
	 * @return the data source
	 */
	DataSource dataSource() {
		return Objects.requireNonNull(this.jdbc.getDataSource(), "jdbc has no DataSource");
	}

	void takeClaimTurn() {
		this.jdbc.query(LOCK, (ResultSet rs) -> null, this.lockKey);
	}

	/**
	 * Complete sent events (delete them, or mark them sent) and give back claims, in one
	 * statement.
	 * @param ids the events the broker acknowledged
	 * @param claims the claims to give back with them (none while failures of the batch
	 * are still to be recorded)
	 * @param owner the relay instance
	 * @param delete whether to delete the events or mark them sent
	 * @return the number of events completed
	 */
	int complete(List<Long> ids, List<Long> claims, String owner, boolean delete) {
		if (ids.isEmpty() && claims.isEmpty()) {
			return 0;
		}
		Integer completed = this.jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(delete ? this.deleteSentSql : this.markSentSql);
			statement.setArray(1, connection.createArrayOf("int8", ids.toArray()));
			statement.setArray(2, connection.createArrayOf("int8", claims.toArray()));
			statement.setString(3, owner);
			return statement;
		}, (ResultSet row) -> row.next() ? row.getInt(1) : 0);
		return (completed != null) ? completed : 0;
	}

	/**
	 * Record failed attempts and schedule the next ones, and give back the claims that
	 * took the events, in one transaction. A failure is recorded only for a pending event
	 * whose key one of these claims still holds: not under a claim taken over meanwhile.
	 * @param failures why each event was not sent, by id
	 * @param claims the claims that took the events, given back
	 * @param owner the relay instance
	 * @param maxAttempts the attempts after which an event is dead
	 * @return the ids that became {@code DEAD}
	 */
	List<Long> fail(Map<Long, Failure> failures, List<Long> claims, String owner, int maxAttempts) {
		if (failures.isEmpty()) {
			release(claims, owner);
			return List.of();
		}
		Long[] ids = failures.keySet().toArray(Long[]::new);
		String[] errors = new String[ids.length];
		Double[] delays = new Double[ids.length];
		Boolean[] attempted = new Boolean[ids.length];
		for (int i = 0; i < ids.length; i++) {
			Failure failure = failures.get(ids[i]);
			errors[i] = failure.error();
			delays[i] = failure.delay().toMillis() / 1000.0;
			attempted[i] = failure.attempted();
		}
		List<Long> dead = new ArrayList<>();
		// Not in the claim's turn: a claim reads no row locks, so a claim running meanwhile
		// sees the events either before this transaction, their keys held by the claims
		// given back here, or after it, backing off (or dead).
		this.transactions.executeWithoutResult((status) -> {
			recordFailures(ids, errors, delays, attempted, claims, owner, maxAttempts, dead);
			release(claims, owner);
		});
		return dead;
	}

	private void recordFailures(Long[] ids, String[] errors, Double[] delays, Boolean[] attempted, List<Long> claims,
			String owner, int maxAttempts, List<Long> dead) {
		this.jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.failSql);
			statement.setInt(1, maxAttempts);
			statement.setArray(2, connection.createArrayOf("int8", ids));
			statement.setArray(3, connection.createArrayOf("text", errors));
			statement.setArray(4, connection.createArrayOf("float8", delays));
			statement.setArray(5, connection.createArrayOf("bool", attempted));
			statement.setArray(6, connection.createArrayOf("int8", claims.toArray()));
			statement.setString(7, owner);
			return statement;
		}, (ResultSet row) -> {
			if ("DEAD".equals(row.getString(2))) {
				dead.add(row.getLong(1));
			}
		});
	}

	/**
	 * Give back claims whose events were not sent (or whose failures are recorded).
	 * @param claims the claims
	 * @param owner the relay instance that made them
	 * @return the number of claims given back
	 */
	int release(List<Long> claims, String owner) {
		if (claims.isEmpty()) {
			return 0;
		}
		return this.jdbc.update((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.releaseClaimsSql);
			statement.setArray(1, connection.createArrayOf("int8", claims.toArray()));
			statement.setString(2, owner);
			return statement;
		});
	}

	/**
	 * Give back every claim of a relay instance.
	 * @param owner the relay instance
	 * @return the number of claims given back
	 */
	int release(String owner) {
		return this.jdbc.update(this.releaseSql, owner);
	}

	/**
	 * Delete claims whose lease ended long ago.
	 * @param age how long ago
	 * @return the number deleted
	 */
	int purgeExpiredClaims(Duration age) {
		// in the claim's turn: a claim deletes expired claims too, and two deletes of
		// several rows each, in no common order, could deadlock
		Integer purged = this.transactions.execute((status) -> {
			takeClaimTurn();
			return this.jdbc.update(this.purgeClaimsSql, age.toMillis() / 1000.0);
		});
		return (purged != null) ? purged : 0;
	}

	/**
	 * Put dead events back in line.
	 * @param eventId the event to re-queue, or {@code null} for all dead events
	 * @return the number re-queued
	 */
	public int requeueDead(@Nullable UUID eventId) {
		return this.jdbc.update(this.requeueSql, eventId, eventId);
	}

	/**
	 * List dead events in id order.
	 * @param limit the most to return
	 * @return the dead events
	 */
	public List<OutboxDeadLetters.DeadEvent> listDead(int limit) {
		return this.jdbc.query(this.listDeadSql,
				(row, rowNum) -> new OutboxDeadLetters.DeadEvent(row.getObject("event_id", UUID.class),
						row.getString("topic"), row.getString("aggregate_id"), row.getString("type"),
						row.getInt("attempts"), row.getString("last_error"),
						row.getTimestamp("created_at").toInstant()),
				limit);
	}

	/**
	 * Delete a dead event.
	 * @param eventId the event
	 * @return the number deleted
	 */
	public int discardDead(UUID eventId) {
		return this.jdbc.update(this.discardDeadSql, eventId);
	}

	int purgeSent(Duration retention) {
		return this.jdbc.update(this.purgeSql, retention.toMillis() / 1000.0);
	}

	/**
	 * Count the pending and dead events (one scan of the events not sent).
	 * @return the state of the table
	 */
	public OutboxStats stats() {
		return this.jdbc.queryForObject(this.statsSql, (row, rowNum) -> new OutboxStats(row.getLong("pending"),
				row.getLong("dead"), (row.getTimestamp("oldest") != null) ? row.getTimestamp("oldest").toInstant() : null));
	}

	/**
	 * Return the age of the oldest pending event, on the database's clock.
	 * @return the age, or {@code null} when no event is pending
	 */
	public @Nullable Duration oldestPendingAge() {
		List<Double> seconds = this.jdbc.queryForList(this.oldestPendingAgeSql, Double.class);
		return seconds.isEmpty() ? null : Duration.ofNanos((long) (Math.max(0, seconds.get(0)) * 1e9));
	}

	private static OutboxRecord record(ResultSet row, int rowNum) throws SQLException {
		// jsonb_each_text walks the object in its stored order: both arrays align
		java.sql.Array names = row.getArray("header_names");
		Map<String, String> headers = (names != null) ? new LinkedHashMap<>() : Map.of();
		if (names != null) {
			String[] keys = (String[]) names.getArray();
			String[] values = (String[]) row.getArray("header_values").getArray();
			for (int i = 0; i < keys.length; i++) {
				headers.put(keys[i], values[i]);
			}
		}
		return new OutboxRecord(row.getLong("claim_id"), row.getLong("id"), row.getObject("event_id", UUID.class), row.getString("aggregate_id"),
				row.getString("topic"), row.getBytes("payload"), headers, row.getString("type"),
				row.getString("aggregate_type"), row.getInt("attempts"), row.getTimestamp("created_at").toInstant());
	}

	/**
	 * Why an event was not sent, and when to try again.
	 *
	 * @param error the error
	 * @param delay the delay before the next attempt
	 * @param attempted whether a send was attempted (counts towards the maximum), or the
	 * event was held back because an earlier send to its topic had just failed
	 */
	record Failure(String error, Duration delay, boolean attempted) {
	}

}
