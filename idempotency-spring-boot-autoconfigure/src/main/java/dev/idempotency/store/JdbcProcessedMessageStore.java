package dev.idempotency.store;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.Assert;

/**
 * {@link ProcessedMessageStore} on a PostgreSQL table. A key is claimed with
 * {@code INSERT ... ON CONFLICT DO NOTHING}: one row inserted means new, none means
 * duplicate. A concurrent claim of the same key waits on the unique index until the first
 * transaction ends, then sees the committed row and reports a duplicate, or inserts if the
 * first rolled back.
 * <p>
 * Claims must run inside the transaction of the listener's work, on the same
 * {@code DataSource}. The wait is bounded by a query timeout on the claim statement alone
 * (whole seconds, rounded up): the driver cancels a claim that waits longer. Unlike a
 * {@code lock_timeout} set for the transaction, it costs nothing when there is no wait
 * and leaves the listener's own statements alone.
 */
public final class JdbcProcessedMessageStore implements ProcessedMessageStore {

	private static final String CLAIM = """
			INSERT INTO %s (consumer_group, idempotency_key, topic, partition, record_offset, processed_at)
			VALUES (?, ?, ?, ?, ?, now())
			ON CONFLICT (consumer_group, idempotency_key) DO NOTHING
			""";

	// Keys are sorted before they are sent, so that two consumers claiming overlapping
	// batches take the index locks in the same order and cannot deadlock.
	private static final String CLAIM_ALL = """
			INSERT INTO %s (consumer_group, idempotency_key, topic, partition, record_offset, processed_at)
			SELECT ?, batch.idempotency_key, batch.topic, batch.partition, batch.record_offset, now()
			FROM unnest(?::varchar[], ?::varchar[], ?::int[], ?::bigint[])
			    AS batch (idempotency_key, topic, partition, record_offset)
			ON CONFLICT (consumer_group, idempotency_key) DO NOTHING
			RETURNING idempotency_key
			""";

	private static final String EXISTS = """
			SELECT EXISTS (SELECT 1 FROM %s WHERE consumer_group = ? AND idempotency_key = ?)
			""";

	// lock_not_available, and query_canceled (the driver's query timeout fired)
	private static final Set<String> GAVE_UP = Set.of("55P03", "57014");

	private final JdbcTemplate jdbcTemplate;

	private final JdbcTemplate claims;

	private final String claimSql;

	private final String existsSql;

	private final String claimAllSql;

	private final Duration lockTimeout;

	/**
	 * Create a store on the given table.
	 * @param jdbcTemplate the template on the application's {@code DataSource}
	 * @param table the table, validated
	 * @param lockTimeout how long a claim may wait for a concurrent claim of the same key,
	 * rounded up to whole seconds; zero to wait as long as the database allows
	 */
	public JdbcProcessedMessageStore(JdbcTemplate jdbcTemplate, TableName table, Duration lockTimeout) {
		Assert.notNull(jdbcTemplate.getDataSource(), "The JdbcTemplate must have a DataSource");
		this.jdbcTemplate = jdbcTemplate;
		this.claims = new JdbcTemplate(jdbcTemplate.getDataSource());
		this.claims.setExceptionTranslator(jdbcTemplate.getExceptionTranslator());
		if (!lockTimeout.isZero() && !lockTimeout.isNegative()) {
			this.claims.setQueryTimeout((int) Math.max(1, (lockTimeout.toMillis() + 999) / 1000));
		}
		this.lockTimeout = lockTimeout;
		this.claimSql = CLAIM.formatted(table.qualified());
		this.existsSql = EXISTS.formatted(table.qualified());
		this.claimAllSql = CLAIM_ALL.formatted(table.qualified());
	}

	@Override
	public Claim claim(ProcessedMessage message) {
		requireTransaction();
		try {
			int inserted = this.claims.update(this.claimSql, message.scope(), message.key(), message.topic(),
					message.partition(), message.offset());
			return (inserted == 1) ? Claim.NEW : Claim.DUPLICATE;
		}
		catch (DataAccessException ex) {
			throw translated(ex, message);
		}
	}

	/**
	 * Claim a batch in one statement: a multi-row {@code INSERT ... ON CONFLICT DO NOTHING
	 * RETURNING} over arrays of the keys. The returned keys are the new ones; of a key that
	 * appears several times in the batch, the first occurrence is new.
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
		byScope.forEach((scope, scoped) -> insertAll(scope, scoped)
			.forEach((key) -> inserted.add(scope + '\0' + key)));
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
			return this.claims.query((connection) -> {
				PreparedStatement statement = connection.prepareStatement(this.claimAllSql);
				statement.setString(1, scope);
				statement.setArray(2, connection.createArrayOf("varchar", keys));
				statement.setArray(3, connection.createArrayOf("varchar", topics));
				statement.setArray(4, connection.createArrayOf("int4", partitions));
				statement.setArray(5, connection.createArrayOf("int8", offsets));
				return statement;
			}, (row, rowNum) -> row.getString(1));
		}
		catch (DataAccessException ex) {
			throw translated(ex, messages.get(0));
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

	private static void requireTransaction() {
		Assert.state(TransactionSynchronizationManager.isActualTransactionActive(),
				"A JDBC claim must run inside the listener's transaction");
	}

	private DataAccessException translated(DataAccessException ex, ProcessedMessage message) {
		if (ex.getMostSpecificCause() instanceof SQLException sqlException
				&& GAVE_UP.contains(sqlException.getSQLState())) {
			return new CannotAcquireLockException("Gave up after idempotency.lock-timeout=" + this.lockTimeout
					+ " waiting for a concurrent claim of the same key in scope '" + message.scope() + "' (record "
					+ message.topic() + "-" + message.partition() + "@" + message.offset()
					+ "); the record will be retried", ex);
		}
		return ex;
	}

}
