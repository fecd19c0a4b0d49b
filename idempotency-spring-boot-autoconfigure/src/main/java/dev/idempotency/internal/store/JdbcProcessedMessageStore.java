package dev.idempotency.internal.store;

import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessageStore;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataAccessException;
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

	static final String LOCK_NOT_AVAILABLE = "55P03";

	private final JdbcTemplate jdbcTemplate;

	private final DataSource dataSource;

	private final ProcessedMessageStatements statements;

	private final BatchClaimInsert batchInsert;

	private final LeasedKeyCheck leasedKeys;

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
		this.statements = ProcessedMessageStatements.on(table);
		// 0 switches PostgreSQL's lock timeout off: wait without bound, whatever the server's default
		this.lockTimeout = (lockTimeout.isZero() || lockTimeout.isNegative()) ? "0"
				: Long.toString(Math.max(1, lockTimeout.toMillis()));
		this.batchInsert = new BatchClaimInsert(jdbcTemplate, this.statements, this.lockTimeout);
		this.leasedKeys = new LeasedKeyCheck(jdbcTemplate, this.statements);
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
					? this.jdbcTemplate.query(this.statements.claimFingerprinted(), ResultSet::next, this.lockTimeout,
							message.scope(), message.key(), message.topic(), message.partition(), message.offset(),
							fingerprint)
					: this.jdbcTemplate.query(this.statements.claim(), ResultSet::next, this.lockTimeout,
							message.scope(), message.key(), message.topic(), message.partition(), message.offset());
			if (Boolean.TRUE.equals(inserted)) {
				return Claim.NEW;
			}
			this.leasedKeys.requireNotLeased(message.scope(), List.of(message));
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
				this.leasedKeys.requireNotLeased(scope,
						scoped.stream().filter((message) -> !taken.contains(message.key())).toList());
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
		try {
			return this.batchInsert.insert(scope, messages);
		}
		catch (DataAccessException ex) {
			throw translated(ex, scope, messages.get(0));
		}
	}

	@Override
	public boolean unclaimAll(List<ProcessedMessage> messages) {
		requireTransaction();
		Map<String, List<String>> byScope = new LinkedHashMap<>();
		for (ProcessedMessage message : messages) {
			byScope.computeIfAbsent(message.scope(), (scope) -> new ArrayList<>()).add(message.key());
		}
		byScope.forEach((scope, keys) -> this.jdbcTemplate.update((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.statements.unclaim());
			statement.setString(1, scope);
			statement.setArray(2, connection.createArrayOf("varchar", keys.toArray()));
			return statement;
		}));
		return true;
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
		Boolean exists = this.jdbcTemplate.queryForObject(this.statements.exists(), Boolean.class, scope, key);
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
