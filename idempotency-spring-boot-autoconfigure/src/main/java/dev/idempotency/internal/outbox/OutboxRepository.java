package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxStats;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
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
 * relay, each one statement (the claim in a short transaction of its own). The relay's
 * claims are made by {@link OutboxClaims}, the statements are in {@link OutboxStatements}.
 */
public final class OutboxRepository {

	/**
	 * The most pending (and dead) events that {@link #stats()} counts: a larger number
	 * reads {@code MAX_COUNTED + 1}, "more than {@code MAX_COUNTED}".
	 */
	public static final int MAX_COUNTED = 10_000;

	private static final String LOCK_NOT_AVAILABLE = "55P03";

	private final JdbcTemplate jdbc;

	private final int publishLockClass;

	private final OutboxStatements statements;

	private final OutboxClaims claims;

	private final TransactionOperations transactions;

	/**
	 * Create a repository.
	 * @param jdbc the template on the application's {@code DataSource}
	 * @param transactions runs the claim in a short transaction of its own
	 * @param table the outbox table, validated
	 * @param batchSize the most events one claim takes
	 */
	public OutboxRepository(JdbcTemplate jdbc, TransactionOperations transactions, TableName table, int batchSize) {
		this.jdbc = jdbc;
		this.publishLockClass = ("idempotency-outbox-publish:" + table.qualified()).hashCode();
		this.statements = OutboxStatements.on(table, batchSize, MAX_COUNTED + 1);
		this.claims = new OutboxClaims(jdbc, transactions, table, this.statements);
		this.transactions = transactions;
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
			PreparedStatement statement = connection.prepareStatement(this.statements.insert());
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
		return this.claims.claim(owner, lease);
	}

	/**
	 * Return the {@code DataSource} of the outbox table.
	 * @return the data source
	 */
	DataSource dataSource() {
		return Objects.requireNonNull(this.jdbc.getDataSource(), "jdbc has no DataSource");
	}

	/**
	 * Wait for the claim turn and hold it until the current transaction ends: relay
	 * instances claim one at a time.
	 */
	void takeClaimTurn() {
		this.claims.takeClaimTurn();
	}

	/**
	 * Complete sent events and give back claims, in one statement; see
	 * {@link OutboxClaims#complete}.
	 */
	int complete(List<Long> ids, List<Long> claims, String owner, boolean delete) {
		return this.claims.complete(ids, claims, owner, delete);
	}

	/**
	 * Record failed attempts and give back the claims that took the events, in one
	 * transaction; see {@link OutboxClaims#fail}.
	 */
	List<Long> fail(Map<Long, Failure> failures, List<Long> claims, String owner, int maxAttempts) {
		return this.claims.fail(failures, claims, owner, maxAttempts);
	}

	/**
	 * Give back claims whose events were not sent; see {@link OutboxClaims#release(List, String)}.
	 */
	int release(List<Long> claims, String owner) {
		return this.claims.release(claims, owner);
	}

	/**
	 * Give back every claim of a relay instance; see {@link OutboxClaims#release(String)}.
	 */
	int release(String owner) {
		return this.claims.release(owner);
	}

	/**
	 * Delete claims whose lease ended long ago; see {@link OutboxClaims#purgeExpiredClaims}.
	 */
	int purgeExpiredClaims(Duration age) {
		return this.claims.purgeExpiredClaims(age);
	}

	/**
	 * Put dead events back in line.
	 * @param eventId the event to re-queue, or {@code null} for all dead events
	 * @return the number re-queued
	 */
	public int requeueDead(@Nullable UUID eventId) {
		return this.jdbc.update(this.statements.requeue(), eventId, eventId);
	}

	/**
	 * List dead events in id order.
	 * @param limit the most to return
	 * @return the dead events
	 */
	public List<OutboxDeadLetters.DeadEvent> listDead(int limit) {
		return this.jdbc.query(this.statements.listDead(),
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
		return this.jdbc.update(this.statements.discardDead(), eventId);
	}

	int purgeSent(Duration retention) {
		return this.jdbc.update(this.statements.purge(), retention.toMillis() / 1000.0);
	}

	/**
	 * Count the pending and dead events, each up to {@link #MAX_COUNTED} (a larger number
	 * reads {@code MAX_COUNTED + 1}), and read the oldest pending one: at most that many
	 * index entries each, whatever the backlog.
	 * @return the state of the table
	 */
	public OutboxStats stats() {
		return Objects.requireNonNull(this.transactions.execute((status) -> {
			this.jdbc.queryForObject(this.statements.statsPlan(), String.class);
			return this.jdbc.queryForObject(this.statements.stats(),
					(row, rowNum) -> new OutboxStats(row.getLong("pending"), row.getLong("dead"),
							(row.getTimestamp("oldest") != null) ? row.getTimestamp("oldest").toInstant() : null));
		}));
	}

	/**
	 * Count every dead event, on the index of dead events.
	 * @return the number of dead events
	 */
	public long countDead() {
		return Objects.requireNonNull(this.jdbc.queryForObject(this.statements.countDead(), Long.class));
	}

	/**
	 * Return the age of the oldest pending event, on the database's clock.
	 * @return the age, or {@code null} when no event is pending
	 */
	public @Nullable Duration oldestPendingAge() {
		List<Double> seconds = this.jdbc.queryForList(this.statements.oldestPendingAge(), Double.class);
		return seconds.isEmpty() ? null : Duration.ofNanos((long) (Math.max(0, seconds.get(0)) * 1e9));
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
