package dev.idempotency.internal.store;

import dev.idempotency.IdempotencyKeyInProgressException;

import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessageStore;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * {@link ProcessedMessageStore} on a PostgreSQL table. A key is claimed with
 * {@code INSERT ... ON CONFLICT DO NOTHING}: one row inserted means new, none means
 * duplicate. A concurrent claim of the same key waits on the unique index until the first
 * transaction ends (bounded by the lock timeout), then sees the committed row and reports
 * a duplicate, or inserts if the first rolled back.
 * <p>
 * Claims must run inside the transaction of the listener's work, on the same
 * {@code DataSource}. The lock timeout is set with {@code set_config('lock_timeout', ...,
 * true)} in the claim statement itself and put back to its previous value by the same
 * statement, so it bounds the claim's wait and nothing else.
 */
public final class JdbcProcessedMessageStore implements ProcessedMessageStore {

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

	// Below this many keys, the savepoint's two round trips cost more than the plain
	// insert saves.
	private static final int PLAIN_INSERT_MIN_KEYS = 16;

	// After a batch whose plain insert met a key already claimed (a replay, a rebalance),
	// the next batches go straight to CLAIM_ALL.
	private static final int BATCHES_WITHOUT_PLAIN_INSERT_AFTER_A_CONFLICT = 16;

	private static final String UNIQUE_VIOLATION = "23505";

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

	static final String LOCK_NOT_AVAILABLE = "55P03";

	private final JdbcTemplate jdbcTemplate;

	private final DataSource dataSource;

	private final String claimSql;

	private final String claimFingerprintedSql;

	private final String existsSql;

	private final String claimAllSql;

	private final String claimAllNewSql;

	private final AtomicInteger batchesWithoutPlainInsert = new AtomicInteger();

	private final String unclaimSql;

	private final String leasedSql;

	private final String lockTimeout;

	private final JdbcLeaseStore leases;

	private final JdbcClaimRows rows;

	/**
	 * Create a store on the given table.
	 * @param jdbcTemplate the template on the application's {@code DataSource}
	 * @param table the table, validated
	 * @param lockTimeout how long a claim may wait for a concurrent claim of the same key;
	 * zero or negative to wait as long as the database allows
	 */
	public JdbcProcessedMessageStore(JdbcTemplate jdbcTemplate, TableName table, Duration lockTimeout) {
		this.jdbcTemplate = jdbcTemplate;
		this.dataSource = Objects.requireNonNull(jdbcTemplate.getDataSource(), "jdbcTemplate has no DataSource");
		this.claimSql = CLAIM.formatted(table.qualified());
		this.claimFingerprintedSql = CLAIM_FINGERPRINTED.formatted(table.qualified());
		this.existsSql = EXISTS.formatted(table.qualified());
		this.unclaimSql = UNCLAIM.formatted(table.qualified());
		this.leasedSql = LEASED.formatted(table.qualified());
		this.claimAllSql = CLAIM_ALL.formatted(table.qualified());
		this.claimAllNewSql = CLAIM_ALL_NEW.formatted(table.qualified());
		// 0 switches PostgreSQL's lock timeout off: wait without bound, whatever the server's default
		this.lockTimeout = (lockTimeout.isZero() || lockTimeout.isNegative()) ? "0"
				: Long.toString(Math.max(1, lockTimeout.toMillis()));
		this.leases = new JdbcLeaseStore(jdbcTemplate, table, this.lockTimeout);
		this.rows = new JdbcClaimRows(this, jdbcTemplate, table);
	}

	@Override
	public Claim claim(ProcessedMessage message) {
		return claim(message, null);
	}

	/**
	 * Claim a key and store a payload fingerprint with it, for {@link JdbcClaimRows}.
	 * @param message the message to claim
	 * @param fingerprint the fingerprint, or {@code null} for none
	 * @return whether the key was new
	 */
	Claim claim(ProcessedMessage message, @Nullable String fingerprint) {
		requireTransaction();
		try {
			Boolean inserted = (fingerprint != null)
					? this.jdbcTemplate.query(this.claimFingerprintedSql, ResultSet::next, this.lockTimeout,
							message.scope(), message.key(), message.topic(), message.partition(), message.offset(),
							fingerprint)
					: this.jdbcTemplate.query(this.claimSql, ResultSet::next, this.lockTimeout, message.scope(),
							message.key(), message.topic(), message.partition(), message.offset());
			if (Boolean.TRUE.equals(inserted)) {
				return Claim.NEW;
			}
			requireNotLeased(message.scope(), List.of(message));
			return Claim.DUPLICATE;
		}
		catch (DataAccessException ex) {
			throw translated(ex, message.scope(), message);
		}
	}

	/**
	 * Claim a batch in one statement: a multi-row {@code INSERT ... ON CONFLICT DO NOTHING
	 * RETURNING} over arrays of the keys. The returned keys are the new ones; of a key that
	 * appears several times in the batch, the first occurrence is new. A batch of at least
	 * 16 keys is first inserted without {@code ON CONFLICT}, in a savepoint, which is
	 * cheaper when every key is new; if one is not, the savepoint is rolled back and the
	 * batch claimed as above.
	 */
	@Override
	public List<Claim> claimAll(List<ProcessedMessage> messages) {
		requireTransaction();
		if (messages.isEmpty()) {
			return List.of();
		}
		Map<String, List<ProcessedMessage>> byScope = new LinkedHashMap<>();
		for (ProcessedMessage message : messages) {
			byScope.computeIfAbsent(message.scope(), (scope) -> new ArrayList<>()).add(message);
		}
		Set<String> inserted = new HashSet<>();
		byScope.forEach((scope, scoped) -> {
			List<String> insertedKeys = insertAll(scope, scoped);
			if (insertedKeys.size() < scoped.size()) {
				Set<String> taken = new HashSet<>(insertedKeys);
				requireNotLeased(scope, scoped.stream().filter((message) -> !taken.contains(message.key())).toList());
			}
			insertedKeys.forEach((key) -> inserted.add(scope + '\0' + key));
		});
		List<Claim> claims = new ArrayList<>(messages.size());
		for (ProcessedMessage message : messages) {
			// remove: a later occurrence of the same key in the batch is a duplicate
			claims.add(inserted.remove(message.scope() + '\0' + message.key()) ? Claim.NEW : Claim.DUPLICATE);
		}
		return claims;
	}

	private List<String> insertAll(String scope, List<ProcessedMessage> messages) {
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
		try {
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
				try (PreparedStatement statement = connection.prepareStatement(this.claimAllSql)) {
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
		catch (DataAccessException ex) {
			throw translated(ex, scope, messages.get(0));
		}
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
		try (PreparedStatement statement = connection.prepareStatement(this.claimAllNewSql)) {
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

	@Override
	public boolean unclaimAll(List<ProcessedMessage> messages) {
		requireTransaction();
		Map<String, List<String>> byScope = new LinkedHashMap<>();
		for (ProcessedMessage message : messages) {
			byScope.computeIfAbsent(message.scope(), (scope) -> new ArrayList<>()).add(message.key());
		}
		byScope.forEach((scope, keys) -> this.jdbcTemplate.update((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.unclaimSql);
			statement.setString(1, scope);
			statement.setArray(2, connection.createArrayOf("varchar", keys.toArray()));
			return statement;
		}));
		return true;
	}

	/**
	 * Refuse to count as duplicates keys that a lease-mode claim of the same scope holds:
	 * one in progress may still be released (the record waits and is retried, as a
	 * lease-mode redelivery does), one marked failed goes to the recoverer, and one whose
	 * claim was released since the insert met it is retried.
	 */
	private void requireNotLeased(String scope, List<ProcessedMessage> duplicates) {
		if (duplicates.isEmpty()) {
			return;
		}
		Map<String, ProcessedMessage> byKey = new LinkedHashMap<>();
		duplicates.forEach((message) -> byKey.putIfAbsent(message.key(), message));
		Map<String, String> leased = new HashMap<>();
		this.jdbcTemplate.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.leasedSql);
			statement.setArray(1, connection.createArrayOf("varchar", byKey.keySet().toArray()));
			statement.setString(2, scope);
			return statement;
		}, (row) -> {
			leased.put(row.getString(1), row.getString(2));
		});
		// the first in the batch: a batch listener applies the records before it
		for (ProcessedMessage message : byKey.values()) {
			String status = leased.get(message.key());
			if (status == null) {
				continue;
			}
			if ("FAILED".equals(status)) {
				throw new FailedLeaseKeyException("Key '" + message.key() + "' in scope '" + scope
						+ "' was marked FAILED by a lease-mode listener of the same scope (record "
						+ RecordCoordinates.describe(message) + "); delete its row to process it again", message);
			}
			if ("RELEASED".equals(status)) {
				throw new IdempotencyKeyInProgressException("Key '" + message.key() + "' in scope '" + scope
						+ "' was held by a lease-mode claim released while this claim was made (record "
						+ RecordCoordinates.describe(message) + "); retry");
			}
			throw new IdempotencyKeyInProgressException("Key '" + message.key() + "' in scope '" + scope
					+ "' is held by a lease-mode claim in progress (record " + RecordCoordinates.describe(message)
					+ "); retry later");
		}
	}

	private DataAccessException translated(DataAccessException ex, String scope, ProcessedMessage example) {
		if (ex.getMostSpecificCause() instanceof SQLException sqlException
				&& LOCK_NOT_AVAILABLE.equals(sqlException.getSQLState())) {
			return new CannotAcquireLockException("Gave up after idempotency.lock-timeout=" + this.lockTimeout
					+ "ms waiting for a concurrent claim of the same key in scope '" + scope + "' (record "
					+ RecordCoordinates.describe(example)
					+ "); the record will be retried", ex);
		}
		return ex;
	}

	/**
	 * Return the {@code DataSource} the store writes to.
	 * @return the data source
	 */
	public DataSource dataSource() {
		return this.dataSource;
	}

	/**
	 * Return the {@code DataSource} whose connection a transaction manager binds to its
	 * transactions for this one: the target of a {@link TransactionAwareDataSourceProxy},
	 * which Spring's transaction managers unwrap, else the data source itself.
	 * @param dataSource the data source
	 * @return the key of its transaction's connection
	 */
	public static DataSource transactionResource(DataSource dataSource) {
		return (dataSource instanceof TransactionAwareDataSourceProxy proxy && proxy.getTargetDataSource() != null)
				? proxy.getTargetDataSource() : dataSource;
	}

	void requireTransaction() {
		// Without a connection of this DataSource bound to the transaction, JdbcTemplate would
		// take a connection of its own in auto-commit mode: the claim would commit at once,
		// apart from the listener's work.
		if (!TransactionSynchronizationManager.isActualTransactionActive()
				|| !TransactionSynchronizationManager.hasResource(transactionResource(this.dataSource))) {
			throw new IllegalStateException("A claim must run in the listener's transaction, on a connection of the "
					+ "store's DataSource; the current thread has "
					+ (TransactionSynchronizationManager.isActualTransactionActive()
							? "a transaction of another resource (a transaction manager of another DataSource, or "
									+ "of Kafka): set idempotency.transaction-manager to the one of the DataSource"
							: "no transaction"));
		}
	}

	@Override
	public boolean isProcessed(String scope, String key) {
		Boolean exists = this.jdbcTemplate.queryForObject(this.existsSql, Boolean.class, scope, key);
		return Boolean.TRUE.equals(exists);
	}

	/**
	 * Return the lease claims on the same table, whose statements commit on their own.
	 */
	@Override
	public LeaseStore leases() {
		return this.leases;
	}

	/**
	 * Return the fingerprints and stored results of transactional claims on the same table,
	 * whose statements run in the listener's transaction.
	 * @return the claim rows
	 */
	public JdbcClaimRows rows() {
		return this.rows;
	}

	@Override
	public String name() {
		return "jdbc";
	}

}
