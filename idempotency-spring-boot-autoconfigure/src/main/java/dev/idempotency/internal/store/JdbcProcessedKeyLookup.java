package dev.idempotency.internal.store;

import java.sql.PreparedStatement;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Tells which keys of a poll the processed-messages table already holds, in one
 * statement, outside any transaction. Only a hint, as the Redis cache is: a key found was
 * processed by a committed transaction and can be skipped without one; a key not found
 * (or any failure) goes to the claim, which decides.
 */
public final class JdbcProcessedKeyLookup {

	private static final Log logger = LogFactory.getLog(JdbcProcessedKeyLookup.class);

	// Only completed keys: a lease-mode claim in progress or failed is not a processed
	// message (a NULL status is a transactional claim, which exists only once committed).
	// One probe of the primary key per key, whatever the table's statistics say: the
	// lateral subquery can only be run once per key, with both columns of the key as its
	// index condition. "idempotency_key = ANY(?)" let a planner with stale statistics (a
	// table that grew since its last ANALYZE) scan the group's rows and filter each one.
	private static final String LOOKUP = """
			SELECT k.key FROM unnest(?::text[]) AS k(key)
			CROSS JOIN LATERAL (SELECT 1 FROM %s p WHERE p.consumer_group = ? AND p.idempotency_key = k.key
			AND (p.status IS NULL OR p.status = 'COMPLETED') LIMIT 1) AS found
			""";

	private final JdbcTemplate jdbc;

	private final String lookupSql;

	/**
	 * Create a lookup.
	 * @param jdbc the template on the store's {@code DataSource}
	 * @param table the processed-messages table, validated
	 */
	public JdbcProcessedKeyLookup(JdbcTemplate jdbc, TableName table) {
		this.jdbc = jdbc;
		this.lookupSql = LOOKUP.formatted(table.qualified());
	}

	String sql() {
		return this.lookupSql;
	}

	/**
	 * Look up the keys of a poll.
	 * @param scope the scope
	 * @param keys the keys, fitted to the store
	 * @return for each key, whether the table holds it; all {@code false} when the lookup
	 * failed
	 */
	public boolean[] areProcessed(String scope, List<String> keys) {
		boolean[] processed = new boolean[keys.size()];
		Set<String> found = new HashSet<>();
		try {
			this.jdbc.query((connection) -> {
				PreparedStatement statement = connection.prepareStatement(this.lookupSql);
				statement.setArray(1, connection.createArrayOf("text", keys.toArray()));
				statement.setString(2, scope);
				return statement;
			}, (row) -> {
				found.add(row.getString(1));
			});
		}
		catch (DataAccessException ex) {
			logger.debug("Could not look up the keys of a poll; the claims decide: " + ex);
			return processed;
		}
		for (int i = 0; i < processed.length; i++) {
			processed[i] = found.contains(keys.get(i));
		}
		return processed;
	}

}
