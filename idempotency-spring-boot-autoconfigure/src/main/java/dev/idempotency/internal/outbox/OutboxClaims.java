package dev.idempotency.internal.outbox;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.internal.outbox.OutboxRepository.Failure;
import dev.idempotency.internal.store.TableName;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionOperations;

/**
 * The relay's claims on the outbox: claim a batch of due events (in a short transaction
 * of its own, in the claim turn), complete the events sent, record the failures, give
 * back claims, and purge the claims that ended long ago. Each is one statement.
 */
final class OutboxClaims {

	private final JdbcTemplate jdbc;

	private final TransactionOperations transactions;

	private final OutboxStatements statements;

	private final long lockKey;

	OutboxClaims(JdbcTemplate jdbc, TransactionOperations transactions, TableName table, OutboxStatements statements) {
		this.jdbc = jdbc;
		this.transactions = transactions;
		this.statements = statements;
		this.lockKey = ("idempotency-outbox:" + table.qualified()).hashCode();
	}

	List<OutboxRecord> claim(String owner, Duration lease) {
		List<OutboxRecord> claimed = this.transactions.execute((status) -> {
			takeClaimTurn();
			return this.jdbc.query(this.statements.claim(), OutboxClaims::record, owner, lease.toMillis() / 1000.0);
		});
		List<OutboxRecord> ordered = new ArrayList<>((claimed != null) ? claimed : List.of());
		ordered.sort(Comparator.comparingLong(OutboxRecord::id));
		return ordered;
	}

	/**
	 * Wait for the claim turn and hold it until the current transaction ends: relay
	 * instances claim one at a time.
	 */
	void takeClaimTurn() {
		this.jdbc.query(this.statements.claimTurn(), (ResultSet rs) -> null, this.lockKey);
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
			PreparedStatement statement = connection
				.prepareStatement(delete ? this.statements.deleteSent() : this.statements.markSent());
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
			PreparedStatement statement = connection.prepareStatement(this.statements.fail());
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
			PreparedStatement statement = connection.prepareStatement(this.statements.releaseClaims());
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
		return this.jdbc.update(this.statements.release(), owner);
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
			return this.jdbc.update(this.statements.purgeClaims(), age.toMillis() / 1000.0);
		});
		return (purged != null) ? purged : 0;
	}

	static OutboxRecord record(ResultSet row, int rowNum) throws SQLException {
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
		return new OutboxRecord(row.getLong("claim_id"), row.getLong("id"), row.getObject("event_id", UUID.class),
				row.getString("aggregate_id"), row.getString("topic"), row.getBytes("payload"), headers,
				row.getString("type"), row.getString("aggregate_type"), row.getInt("attempts"),
				row.getTimestamp("created_at").toInstant());
	}

}
