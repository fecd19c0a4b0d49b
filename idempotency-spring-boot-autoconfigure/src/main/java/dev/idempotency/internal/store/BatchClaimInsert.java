package dev.idempotency.internal.store;

import dev.idempotency.store.ProcessedMessage;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Inserts the keys of one scope of a batch claim, in one statement, and tells which were
 * new. A batch of at least 16 keys is first inserted without {@code ON CONFLICT}, in a
 * savepoint, which is cheaper when every key is new; if one is not, the savepoint is
 * rolled back and the batch inserted with {@code ON CONFLICT DO NOTHING}.
 */
final class BatchClaimInsert {

	// Below this many keys, the savepoint's two round trips cost more than the plain
	// insert saves.
	private static final int PLAIN_INSERT_MIN_KEYS = 16;

	// After a batch whose plain insert met a key already claimed (a replay, a rebalance),
	// the next batches go straight to CLAIM_ALL.
	private static final int BATCHES_WITHOUT_PLAIN_INSERT_AFTER_A_CONFLICT = 16;

	private static final String UNIQUE_VIOLATION = "23505";

	private final JdbcTemplate jdbcTemplate;

	private final ProcessedMessageStatements statements;

	private final String lockTimeout;

	private final AtomicInteger batchesWithoutPlainInsert = new AtomicInteger();

	BatchClaimInsert(JdbcTemplate jdbcTemplate, ProcessedMessageStatements statements, String lockTimeout) {
		this.jdbcTemplate = jdbcTemplate;
		this.statements = statements;
		this.lockTimeout = lockTimeout;
	}

	/**
	 * Insert the keys of a batch, of one scope. Keys are sorted before they are sent (see
	 * {@link ProcessedMessageStatements#claimAll()}); of a key that appears several times,
	 * the first occurrence is inserted.
	 * @param scope the scope of the messages
	 * @param messages the messages
	 * @return the keys inserted
	 */
	List<String> insert(String scope, List<ProcessedMessage> messages) {
		Map<String, ProcessedMessage> firstByKey = new TreeMap<>();
		for (ProcessedMessage message : messages) {
			firstByKey.putIfAbsent(message.key(), message);
		}
		int size = firstByKey.size();
		String[] keys = new String[size];
		String[] topics = new String[size];
		Integer[] partitions = new Integer[size];
		Long[] offsets = new Long[size];
		int i = 0;
		for (ProcessedMessage message : firstByKey.values()) {
			keys[i] = message.key();
			topics[i] = message.topic();
			partitions[i] = message.partition();
			offsets[i] = message.offset();
			i++;
		}
		if (size >= PLAIN_INSERT_MIN_KEYS && plainInsertAllowed()) {
			List<String> inserted = this.jdbcTemplate
				.execute((ConnectionCallback<@Nullable List<String>>) (connection) -> insertAllNew(connection, scope,
						keys, topics, partitions, offsets));
			if (inserted != null) {
				return inserted;
			}
			this.batchesWithoutPlainInsert.set(BATCHES_WITHOUT_PLAIN_INSERT_AFTER_A_CONFLICT);
		}
		List<String> inserted = this.jdbcTemplate.execute((ConnectionCallback<List<String>>) (connection) -> {
			try (PreparedStatement statement = connection.prepareStatement(this.statements.claimAll())) {
				bindBatch(statement, connection, scope, keys, topics, partitions, offsets);
				try (ResultSet row = statement.executeQuery()) {
					row.next();
					Array array = row.getArray(1);
					// array_agg of no rows is NULL
					return (array != null) ? Arrays.asList((String[]) array.getArray()) : List.of();
				}
			}
		});
		return (inserted != null) ? inserted : List.of();
	}

	private boolean plainInsertAllowed() {
		return this.batchesWithoutPlainInsert.getAndUpdate((left) -> Math.max(0, left - 1)) == 0;
	}

	/**
	 * Insert every key of a batch, in a savepoint.
	 * @return the keys, all inserted, or {@code null} if one was already there (the
	 * savepoint rolled back: nothing of the batch is inserted)
	 */
	private @Nullable List<String> insertAllNew(Connection connection, String scope, String[] keys, String[] topics,
			Integer[] partitions, Long[] offsets) throws SQLException {
		Savepoint savepoint = connection.setSavepoint();
		try (PreparedStatement statement = connection.prepareStatement(this.statements.claimAllNew())) {
			bindBatch(statement, connection, scope, keys, topics, partitions, offsets);
			try (ResultSet row = statement.executeQuery()) {
				row.next();
				if (row.getInt(1) != keys.length) {
					throw new IllegalStateException(
							"Inserted " + row.getInt(1) + " of the batch's " + keys.length + " keys without a conflict");
				}
			}
		}
		catch (SQLException ex) {
			if (UNIQUE_VIOLATION.equals(ex.getSQLState())) {
				connection.rollback(savepoint);
				return null;
			}
			throw ex;
		}
		connection.releaseSavepoint(savepoint);
		return Arrays.asList(keys);
	}

	private void bindBatch(PreparedStatement statement, Connection connection, String scope, String[] keys,
			String[] topics, Integer[] partitions, Long[] offsets) throws SQLException {
		int index = 1;
		statement.setString(index++, this.lockTimeout);
		statement.setString(index++, scope);
		statement.setArray(index++, connection.createArrayOf("varchar", keys));
		statement.setArray(index++, connection.createArrayOf("varchar", topics));
		statement.setArray(index++, connection.createArrayOf("int4", partitions));
		statement.setArray(index, connection.createArrayOf("int8", offsets));
	}

}
