package dev.idempotency.internal.outbox;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import dev.idempotency.internal.outbox.OutboxRepository.Failure;
import dev.idempotency.internal.store.TableName;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionOperations;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The events the replication relay leaves in the outbox table: an event it could not
 * send ({@code DEAD} after its attempts), the later events of that event's key (held
 * back), and the events written before its slot existed. A parked event has its
 * {@code last_error} set, so it blocks the later events of its key exactly as a failed
 * event does for the table relay; {@code OutboxDeadLetters} lists, re-queues and
 * discards the dead ones. The replication relay sends the parked events from the table,
 * in id order per key, and parks every streamed event whose key has a parked event.
 * Only the active reader of the slot writes here, so none of this needs a claim.
 */
final class OutboxParking {

	// Parks events: records why each was not sent, and makes it DEAD when it is.
	private static final String PARK = """
			UPDATE %1$s SET status = CASE WHEN parked.dead THEN 'DEAD' ELSE 'PENDING' END,
			    attempts = parked.attempts, last_error = parked.error,
			    next_attempt_at = CASE WHEN parked.delay_seconds > 0
			        THEN now() + make_interval(secs => parked.delay_seconds) ELSE '-infinity' END
			FROM unnest(?::bigint[], ?::text[], ?::int[], ?::boolean[], ?::float8[])
			    AS parked (id, error, attempts, dead, delay_seconds)
			WHERE %1$s.id = parked.id AND %1$s.status = 'PENDING'
			""";

	// The pending events without last_error that a snapshot sees: those written before
	// the slot's consistent point, which the stream does not carry.
	private static final String UNSTREAMED = """
			SELECT id FROM %s WHERE status = 'PENDING' AND last_error IS NULL
			""";

	private static final String HOLD_BACK = """
			UPDATE %s SET last_error = ? WHERE id = ANY(?) AND status = 'PENDING' AND last_error IS NULL
			""";

	// Due parked events whose key has no older event that is dead or parked and not due:
	// the same order condition as the table relay's claim, on the index of blocking events.
	private static final String DUE = """
			SELECT 0 AS claim_id, o.id, o.event_id, o.aggregate_id, o.topic, o.payload, o.type, o.aggregate_type,
			    o.attempts, o.created_at,
			    CASE WHEN o.headers <> '{}' THEN ARRAY(SELECT key FROM jsonb_each_text(o.headers)) END AS header_names,
			    CASE WHEN o.headers <> '{}' THEN ARRAY(SELECT value FROM jsonb_each_text(o.headers)) END AS header_values
			FROM %1$s o
			WHERE o.status = 'PENDING' AND o.last_error IS NOT NULL AND o.next_attempt_at <= now()
			  AND NOT EXISTS (
			      SELECT 1 FROM %1$s older
			      WHERE older.aggregate_id = o.aggregate_id AND older.id < o.id
			        AND (older.status = 'DEAD' OR (older.status = 'PENDING' AND older.last_error IS NOT NULL))
			        AND (older.status = 'DEAD' OR older.next_attempt_at > now()))
			ORDER BY o.id
			LIMIT %2$d
			""";

	private static final String FAIL = """
			UPDATE %1$s SET attempts = attempts + CASE WHEN failed.attempted THEN 1 ELSE 0 END,
			    last_error = failed.error,
			    status = CASE WHEN failed.attempted AND attempts + 1 >= ? THEN 'DEAD' ELSE 'PENDING' END,
			    next_attempt_at = now() + make_interval(secs => failed.delay_seconds)
			FROM unnest(?::bigint[], ?::text[], ?::float8[], ?::boolean[])
			    AS failed (id, error, delay_seconds, attempted)
			WHERE %1$s.id = failed.id AND %1$s.status = 'PENDING'
			RETURNING %1$s.id, status
			""";

	private static final String ANY_PARKED = """
			SELECT EXISTS (SELECT 1 FROM %s WHERE status = 'DEAD' OR (status = 'PENDING' AND last_error IS NOT NULL))
			""";

	private static final String PARKED_KEYS = """
			SELECT DISTINCT aggregate_id FROM %s
			WHERE aggregate_id = ANY(?) AND (status = 'DEAD' OR (status = 'PENDING' AND last_error IS NOT NULL))
			""";

	private final JdbcTemplate jdbc;

	private final TransactionTemplate snapshotTransactions;

	private final TransactionOperations transactions;

	private final String park;

	private final String unstreamed;

	private final String holdBack;

	private final String due;

	private final String fail;

	private final String anyParked;

	private final String parkedKeys;

	OutboxParking(JdbcTemplate jdbc, TransactionTemplate transactions, TableName table, int batchSize) {
		this.jdbc = jdbc;
		this.transactions = transactions;
		this.snapshotTransactions = new TransactionTemplate(
				Objects.requireNonNull(transactions.getTransactionManager(), "no transaction manager"));
		this.snapshotTransactions.setIsolationLevel(TransactionDefinition.ISOLATION_REPEATABLE_READ);
		this.snapshotTransactions.setReadOnly(true);
		String name = table.qualified();
		this.park = PARK.formatted(name);
		this.unstreamed = UNSTREAMED.formatted(name);
		this.holdBack = HOLD_BACK.formatted(name);
		this.due = DUE.formatted(name, batchSize);
		this.fail = FAIL.formatted(name);
		this.anyParked = ANY_PARKED.formatted(name);
		this.parkedKeys = PARKED_KEYS.formatted(name);
	}

	/**
	 * Park events of the stream: each with why, as {@code DEAD} or held back.
	 * @param events the events to park, in stream order
	 */
	void park(List<Parked> events) {
		if (events.isEmpty()) {
			return;
		}
		this.jdbc.update((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.park);
			statement.setArray(1, connection.createArrayOf("int8", events.stream().map(Parked::id).toArray()));
			statement.setArray(2, connection.createArrayOf("text", events.stream().map(Parked::error).toArray()));
			statement.setArray(3, connection.createArrayOf("int4", events.stream().map(Parked::attempts).toArray()));
			statement.setArray(4, connection.createArrayOf("bool", events.stream().map(Parked::dead).toArray()));
			statement.setArray(5, connection.createArrayOf("float8",
					events.stream().map((event) -> event.delay().toMillis() / 1000.0).toArray()));
			return statement;
		});
	}

	/**
	 * Park the pending events that the stream of a new slot does not carry: those that an
	 * exported snapshot of the slot's consistent point sees.
	 * @param snapshot the name of the snapshot the slot's creation exported
	 * @return the number of events parked
	 */
	int parkUnstreamed(String snapshot) {
		List<Long> ids = Objects.requireNonNull(this.snapshotTransactions.execute((status) -> {
			this.jdbc.execute("SET TRANSACTION SNAPSHOT '" + snapshot.replace("'", "''") + "'");
			return this.jdbc.queryForList(this.unstreamed, Long.class);
		}));
		if (ids.isEmpty()) {
			return 0;
		}
		return this.jdbc.update((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.holdBack);
			statement.setString(1, "Held back: written before the replication slot was created");
			statement.setArray(2, connection.createArrayOf("int8", ids.toArray()));
			return statement;
		});
	}

	/**
	 * Return the parked events that are due and first of their keys, in id order.
	 * @return the events, at most a batch
	 */
	List<OutboxRecord> due() {
		return this.jdbc.query(this.due, OutboxClaims::record);
	}

	/**
	 * Record failed attempts of parked events.
	 * @param failures why each event was not sent, by id
	 * @param maxAttempts attempts after which an event is dead
	 * @return the ids of the events that are dead now
	 */
	List<Long> fail(Map<Long, Failure> failures, int maxAttempts) {
		if (failures.isEmpty()) {
			return List.of();
		}
		Long[] ids = failures.keySet().toArray(Long[]::new);
		List<Long> dead = new ArrayList<>();
		this.transactions.executeWithoutResult((status) -> this.jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.fail);
			statement.setInt(1, maxAttempts);
			statement.setArray(2, connection.createArrayOf("int8", ids));
			statement.setArray(3, connection.createArrayOf("text",
					failures.values().stream().map(Failure::error).toArray()));
			statement.setArray(4, connection.createArrayOf("float8",
					failures.values().stream().map((failure) -> failure.delay().toMillis() / 1000.0).toArray()));
			statement.setArray(5, connection.createArrayOf("bool",
					failures.values().stream().map(Failure::attempted).toArray()));
			return statement;
		}, (ResultSet row) -> {
			if ("DEAD".equals(row.getString("status"))) {
				dead.add(row.getLong("id"));
			}
		}));
		return dead;
	}

	/**
	 * Return whether any event is parked (dead, or pending with an error).
	 * @return whether one is
	 */
	boolean anyParked() {
		return Boolean.TRUE.equals(this.jdbc.queryForObject(this.anyParked, Boolean.class));
	}

	/**
	 * Return those of the given keys that have a parked event.
	 * @param keys the keys
	 * @return the parked ones
	 */
	Set<String> parkedKeys(Collection<String> keys) {
		if (keys.isEmpty()) {
			return Set.of();
		}
		return new HashSet<>(this.jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.parkedKeys);
			statement.setArray(1, connection.createArrayOf("text", keys.toArray()));
			return statement;
		}, (row, rowNum) -> row.getString(1)));
	}

	/**
	 * An event of the stream to park.
	 *
	 * @param id its id
	 * @param error why it is parked
	 * @param attempts the attempts made
	 * @param dead whether it is dead, or held back behind an earlier event of its key
	 * @param delay how long before it is sent from the table; zero for at once
	 */
	record Parked(long id, String error, int attempts, boolean dead, Duration delay) {

		Parked(long id, String error, int attempts, boolean dead) {
			this(id, error, attempts, dead, Duration.ZERO);
		}

	}

}
