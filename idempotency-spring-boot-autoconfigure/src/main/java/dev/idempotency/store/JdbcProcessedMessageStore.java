package dev.idempotency.store;

import java.sql.SQLException;
import java.time.Duration;

import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.Assert;

/**
 * {@link ProcessedMessageStore} on a PostgreSQL table. A key is claimed with
 * {@code INSERT ... ON CONFLICT DO NOTHING}: one row inserted means new, none means
 * duplicate. A concurrent claim of the same key waits on the unique index until the first
 * transaction ends (bounded by the lock timeout), then sees the committed row and reports
 * a duplicate, or inserts if the first rolled back.
 * <p>
 * Claims must run inside the transaction of the listener's work, on the same
 * {@code DataSource}. The lock timeout is set for that transaction with
 * {@code set_config('lock_timeout', ..., true)}, in the same statement as the insert, so
 * it also bounds lock waits of the listener's own statements in that transaction.
 */
public final class JdbcProcessedMessageStore implements ProcessedMessageStore {

	private static final String CLAIM = """
			WITH settings AS (SELECT set_config('lock_timeout', ?, true))
			INSERT INTO %s (consumer_group, idempotency_key, topic, partition, record_offset, processed_at)
			SELECT ?, ?, ?, ?, ?, now() FROM settings
			ON CONFLICT (consumer_group, idempotency_key) DO NOTHING
			""";

	private static final String CLAIM_WITHOUT_TIMEOUT = """
			INSERT INTO %s (consumer_group, idempotency_key, topic, partition, record_offset, processed_at)
			VALUES (?, ?, ?, ?, ?, now())
			ON CONFLICT (consumer_group, idempotency_key) DO NOTHING
			""";

	private static final String EXISTS = """
			SELECT EXISTS (SELECT 1 FROM %s WHERE consumer_group = ? AND idempotency_key = ?)
			""";

	private static final String LOCK_NOT_AVAILABLE = "55P03";

	private final JdbcTemplate jdbcTemplate;

	private final String claimSql;

	private final String existsSql;

	private final String lockTimeout;

	/**
	 * Create a store on the given table.
	 * @param jdbcTemplate the template on the application's {@code DataSource}
	 * @param table the table, validated
	 * @param lockTimeout how long a claim may wait for a concurrent claim of the same key;
	 * zero or negative to wait as long as the database allows
	 */
	public JdbcProcessedMessageStore(JdbcTemplate jdbcTemplate, TableName table, Duration lockTimeout) {
		this.jdbcTemplate = jdbcTemplate;
		boolean bounded = !lockTimeout.isZero() && !lockTimeout.isNegative();
		this.claimSql = (bounded ? CLAIM : CLAIM_WITHOUT_TIMEOUT).formatted(table.qualified());
		this.existsSql = EXISTS.formatted(table.qualified());
		this.lockTimeout = bounded ? Long.toString(Math.max(1, lockTimeout.toMillis())) : "";
	}

	@Override
	public Claim claim(ProcessedMessage message) {
		Assert.state(TransactionSynchronizationManager.isActualTransactionActive(),
				"A JDBC claim must run inside the listener's transaction");
		try {
			int inserted = this.lockTimeout.isEmpty()
					? this.jdbcTemplate.update(this.claimSql, message.scope(), message.key(), message.topic(),
							message.partition(), message.offset())
					: this.jdbcTemplate.update(this.claimSql, this.lockTimeout, message.scope(), message.key(),
							message.topic(), message.partition(), message.offset());
			return (inserted == 1) ? Claim.NEW : Claim.DUPLICATE;
		}
		catch (DataAccessException ex) {
			if (ex.getMostSpecificCause() instanceof SQLException sqlException
					&& LOCK_NOT_AVAILABLE.equals(sqlException.getSQLState())) {
				throw new CannotAcquireLockException("Gave up after idempotency.lock-timeout=" + this.lockTimeout
						+ "ms waiting for a concurrent claim of the same key in scope '" + message.scope()
						+ "' (record " + message.topic() + "-" + message.partition() + "@" + message.offset()
						+ "); the record will be retried", ex);
			}
			throw ex;
		}
	}

	@Override
	public boolean isProcessed(String scope, String key) {
		Boolean exists = this.jdbcTemplate.queryForObject(this.existsSql, Boolean.class, scope, key);
		return Boolean.TRUE.equals(exists);
	}

	@Override
	public String name() {
		return "jdbc";
	}

}
