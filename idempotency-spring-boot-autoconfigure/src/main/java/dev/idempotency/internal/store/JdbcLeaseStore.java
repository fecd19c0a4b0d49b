package dev.idempotency.internal.store;

import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.store.LeaseClaim;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessage;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

import javax.sql.DataSource;

import dev.idempotency.IdempotencyKeyInProgressException;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@link LeaseStore} on the PostgreSQL processed-messages table. A claim is one
 * {@code INSERT ... ON CONFLICT DO UPDATE ... WHERE} statement: it inserts the key as
 * {@code IN_PROGRESS}, or takes over a claim whose lease ended, and draws a new fencing
 * token from the table's sequence either way; the lease deadline is computed with the
 * database's {@code now()}, never the JVM's clock. Completion, release and failure are
 * fenced on the token in their {@code WHERE}. Rows of the transactional mode have a
 * {@code NULL} status, which means completed.
 * <p>
 * Each statement commits on its own. When the calling thread has a transaction bound to
 * the same {@code DataSource}, the statement runs in a new transaction beside it.
 */
final class JdbcLeaseStore implements LeaseStore {

	// The takeover leaves the diagnostic columns (topic, partition, record_offset) alone:
	// lease rows do not rely on them. The lock timeout bounds the wait for a transactional
	// claim of the same key still open; the statement commits alone, so the setting ends
	// with it.
	private static final String CLAIM = """
			WITH settings AS (SELECT set_config('lock_timeout', ?, true))
			INSERT INTO %1$s AS claimed (consumer_group, idempotency_key, processed_at, status, fencing_token,
			    lease_until, fingerprint)
			SELECT ?, ?, now(), 'IN_PROGRESS', nextval('%2$s'), now() + ? * interval '1 millisecond', ?
			FROM settings
			ON CONFLICT (consumer_group, idempotency_key) DO UPDATE
			SET processed_at = now(), status = 'IN_PROGRESS', fencing_token = EXCLUDED.fencing_token,
			    lease_until = EXCLUDED.lease_until, fingerprint = COALESCE(EXCLUDED.fingerprint, claimed.fingerprint),
			    result = NULL, failure = NULL
			WHERE claimed.status = 'IN_PROGRESS' AND claimed.lease_until <= now()
			    AND (claimed.fingerprint IS NULL OR EXCLUDED.fingerprint IS NULL
			        OR claimed.fingerprint = EXCLUDED.fingerprint)
			RETURNING fencing_token, (xmax::text <> '0') AS taken_over
			""";

	private static final String STATE = """
			SELECT status, lease_until > now() AS live, fencing_token, fingerprint, result::text, failure
			FROM %s WHERE consumer_group = ? AND idempotency_key = ?
			""";

	private static final String COMPLETE = """
			UPDATE %s SET status = 'COMPLETED', processed_at = now(), lease_until = NULL, result = CAST(? AS jsonb)
			WHERE consumer_group = ? AND idempotency_key = ? AND status IN ('IN_PROGRESS', 'COMPLETED')
			AND fencing_token = ?
			""";

	private static final String RELEASE = """
			DELETE FROM %s
			WHERE consumer_group = ? AND idempotency_key = ? AND status = 'IN_PROGRESS' AND fencing_token = ?
			""";

	private static final String FAIL = """
			UPDATE %s SET status = 'FAILED', processed_at = now(), lease_until = NULL, failure = ?
			WHERE consumer_group = ? AND idempotency_key = ? AND status IN ('IN_PROGRESS', 'FAILED')
			AND fencing_token = ?
			""";

	// a claim that vanished or changed between the claim and the look-up is claimed again
	private static final int ATTEMPTS = 3;

	private static final int MAX_FAILURE_LENGTH = 2000;

	private final JdbcTemplate jdbcTemplate;

	private final String lockTimeout;

	private final DataSource dataSource;

	private final TransactionTemplate apart;

	private final String claimSql;

	private final String stateSql;

	private final String completeSql;

	private final String releaseSql;

	private final String failSql;

	JdbcLeaseStore(JdbcTemplate jdbcTemplate, TableName table, String lockTimeout) {
		this.jdbcTemplate = jdbcTemplate;
		this.lockTimeout = lockTimeout;
		this.dataSource = Objects.requireNonNull(jdbcTemplate.getDataSource(), "jdbcTemplate has no DataSource");
		TransactionTemplate apart = new TransactionTemplate(new DataSourceTransactionManager(this.dataSource));
		apart.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		this.apart = apart;
		this.claimSql = CLAIM.formatted(table.qualified(), fencingSequence(table));
		this.stateSql = STATE.formatted(table.qualified());
		this.completeSql = COMPLETE.formatted(table.qualified());
		this.releaseSql = RELEASE.formatted(table.qualified());
		this.failSql = FAIL.formatted(table.qualified());
	}

	/**
	 * Return the name of the sequence of fencing tokens of a table, as the migration
	 * creates it.
	 * @param table the processed-messages table
	 * @return the qualified sequence name
	 */
	static String fencingSequence(TableName table) {
		String name = table.table() + "_fencing_seq";
		// PostgreSQL cuts identifiers to 63 bytes, in the migration's CREATE SEQUENCE too
		name = (name.length() > 63) ? name.substring(0, 63) : name;
		return (table.schema() != null) ? table.schema() + "." + name : name;
	}

	@Override
	public LeaseClaim claim(ProcessedMessage message, Duration lease, @Nullable String fingerprint) {
		for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
			List<LeaseClaim> acquired = acquire(message, lease, fingerprint);
			if (!acquired.isEmpty()) {
				return acquired.get(0);
			}
			List<LeaseClaim> held = apart(() -> this.jdbcTemplate.query(this.stateSql, (row, rowNum) -> {
				String status = row.getString(1);
				LeaseClaim.State state = (status == null || status.equals("COMPLETED")) ? LeaseClaim.State.COMPLETED
						: status.equals("FAILED") ? LeaseClaim.State.FAILED : LeaseClaim.State.IN_PROGRESS;
				boolean live = row.getBoolean(2);
				String stored = row.getString(4);
				if (state == LeaseClaim.State.IN_PROGRESS && !live
						&& (stored == null || fingerprint == null || stored.equals(fingerprint))) {
					// expired since the claim looked: claim again
					return null;
				}
				return new LeaseClaim(state, row.getLong(3), false, stored, row.getString(5), row.getString(6));
			}, message.scope(), message.key()));
			if (!held.isEmpty() && held.get(0) != null) {
				return held.get(0);
			}
		}
		throw new IdempotencyKeyInProgressException("Key in scope '" + message.scope() + "' changed hands "
				+ ATTEMPTS + " times while being claimed (record " + RecordCoordinates.describe(message) + "); retry later");
	}

	private List<LeaseClaim> acquire(ProcessedMessage message, Duration lease, @Nullable String fingerprint) {
		try {
			return apart(() -> this.jdbcTemplate.query(this.claimSql,
					(row, rowNum) -> LeaseClaim.acquired(row.getLong(1), row.getBoolean(2)), this.lockTimeout,
					message.scope(), message.key(), Math.max(1, lease.toMillis()), fingerprint));
		}
		catch (DataAccessException ex) {
			if (ex.getMostSpecificCause() instanceof SQLException sqlException
					&& JdbcProcessedMessageStore.LOCK_NOT_AVAILABLE.equals(sqlException.getSQLState())) {
				throw new CannotAcquireLockException("Gave up after idempotency.lock-timeout=" + this.lockTimeout
						+ "ms waiting for a transactional claim of the same key in scope '" + message.scope()
						+ "' (record " + RecordCoordinates.describe(message) + "); the record will be retried", ex);
			}
			throw ex;
		}
	}

	@Override
	public boolean complete(ProcessedMessage message, long fencingToken, @Nullable String result) {
		return apart(() -> this.jdbcTemplate.update(this.completeSql, result, message.scope(), message.key(),
				fencingToken)) == 1;
	}

	@Override
	public boolean release(ProcessedMessage message, long fencingToken) {
		return apart(() -> this.jdbcTemplate.update(this.releaseSql, message.scope(), message.key(),
				fencingToken)) == 1;
	}

	/**
	 * Return the failure text as a {@code text} column holds it: PostgreSQL's text has no
	 * NUL character (each becomes U+FFFD), and it is cut to its first
	 * {@value #MAX_FAILURE_LENGTH} characters, never inside a surrogate pair.
	 */
	static String storable(String failure) {
		String text = failure.replace('\0', '\uFFFD');
		if (text.length() <= MAX_FAILURE_LENGTH) {
			return text;
		}
		int end = Character.isHighSurrogate(text.charAt(MAX_FAILURE_LENGTH - 1)) ? MAX_FAILURE_LENGTH - 1
				: MAX_FAILURE_LENGTH;
		return text.substring(0, end);
	}

	@Override
	public boolean fail(ProcessedMessage message, long fencingToken, String failure) {
		String stored = storable(failure);
		return apart(() -> this.jdbcTemplate.update(this.failSql, stored, message.scope(), message.key(),
				fencingToken)) == 1;
	}

	private <T> T apart(Supplier<T> statement) {
		// without a transaction of this DataSource on the thread, JdbcTemplate runs the
		// statement in auto-commit: it commits alone, one round trip
		if (!TransactionSynchronizationManager
			.hasResource(JdbcProcessedMessageStore.transactionResource(this.dataSource))) {
			return statement.get();
		}
		return Objects.requireNonNull(this.apart.execute((status) -> statement.get()));
	}

}
