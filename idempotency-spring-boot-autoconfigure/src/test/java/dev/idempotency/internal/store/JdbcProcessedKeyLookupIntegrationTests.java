package dev.idempotency.internal.store;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.idempotency.test.TestInfrastructure;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lookup of a poll's keys, on a real PostgreSQL whose statistics of the table are
 * stale: gathered when the table held other rows, before it grew by 50,000 keys of one
 * group (a deployment on a truncated table, before autovacuum's ANALYZE). Its plan must
 * still probe the primary key once per key, never read the group's rows and filter them.
 */
class JdbcProcessedKeyLookupIntegrationTests {

	private static final String TABLE = "lookup_stale_stats";

	private static final String GROUP = "stale";

	private static final int ROWS = 50_000;

	private static SingleConnectionDataSource dataSource;

	private static JdbcTemplate jdbc;

	private static List<String> stored;

	@BeforeAll
	static void createATableWithStaleStatistics() {
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		dataSource = new SingleConnectionDataSource(postgres.jdbcUrl(), postgres.username(), postgres.password(), true);
		jdbc = new JdbcTemplate(dataSource);
		jdbc.execute("DROP TABLE IF EXISTS " + TABLE);
		jdbc.execute("""
				CREATE TABLE %s (consumer_group VARCHAR(255) COLLATE "C" NOT NULL,
				idempotency_key VARCHAR(255) COLLATE "C" NOT NULL, topic VARCHAR(249), partition INTEGER,
				record_offset BIGINT, processed_at TIMESTAMPTZ NOT NULL DEFAULT now(), status VARCHAR(16),
				PRIMARY KEY (consumer_group, idempotency_key)) WITH (autovacuum_enabled = false)
				""".formatted(TABLE));
		jdbc.update("INSERT INTO " + TABLE + " (consumer_group, idempotency_key) "
				+ "SELECT 'other', 'k-' || i FROM generate_series(1, 1000) AS i");
		jdbc.execute("ANALYZE " + TABLE);
		jdbc.execute("TRUNCATE " + TABLE);
		jdbc.update("INSERT INTO " + TABLE + " (consumer_group, idempotency_key) "
				+ "SELECT ?, md5(i::text) FROM generate_series(1, ?) AS i", GROUP, ROWS);
		stored = jdbc.queryForList("SELECT md5(i::text) FROM generate_series(1, 250) AS i", String.class);
	}

	@ParameterizedTest(name = "plan_cache_mode = {0}")
	@ValueSource(strings = { "force_custom_plan", "force_generic_plan" })
	void probesTheKeyOfEachLookedUpKeyWhateverTheStatistics(String planCacheMode) {
		jdbc.execute("SET plan_cache_mode = " + planCacheMode);
		List<String> keys = keys();
		List<String> plan = new ArrayList<>();
		jdbc.query((connection) -> {
			var statement = connection.prepareStatement("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "
					+ new JdbcProcessedKeyLookup(jdbc, new TableName(null, TABLE)).sql());
			statement.setArray(1, connection.createArrayOf("text", keys.toArray()));
			statement.setString(2, GROUP);
			return statement;
		}, (row) -> {
			plan.add(row.getString(1));
		});
		String text = String.join("\n", plan);
		assertThat(removedByFilter(text)).as(text).isZero();
		assertThat(text).as(text).doesNotContain("Seq Scan", "Hash Join").contains("Index Scan");
	}

	@Test
	void findsTheKeysTheTableHoldsAndOnlyThose() {
		List<String> keys = keys();
		boolean[] processed = new JdbcProcessedKeyLookup(jdbc, new TableName(null, TABLE)).areProcessed(GROUP, keys);
		for (int i = 0; i < keys.size(); i++) {
			assertThat(processed[i]).as(keys.get(i)).isEqualTo(stored.contains(keys.get(i)));
		}
		// a lease-mode claim in progress or failed is not a processed message; a completed one is
		String run = UUID.randomUUID().toString();
		for (String status : new String[] { "IN_PROGRESS", "FAILED", "COMPLETED" }) {
			jdbc.update("INSERT INTO " + TABLE + " (consumer_group, idempotency_key, status) VALUES (?, ?, ?)", GROUP,
					run + status, status);
		}
		assertThat(new JdbcProcessedKeyLookup(jdbc, new TableName(null, TABLE)).areProcessed(GROUP,
				List.of(run + "IN_PROGRESS", run + "FAILED", run + "COMPLETED")))
			.containsExactly(false, false, true);
		assertThat(new JdbcProcessedKeyLookup(jdbc, new TableName(null, TABLE)).areProcessed("another-group", keys))
			.containsOnly(false);
	}

	// a poll of 500: half of them stored, half new
	private static List<String> keys() {
		List<String> keys = new ArrayList<>(stored);
		for (int i = 0; i < 250; i++) {
			keys.add(UUID.randomUUID().toString());
		}
		return keys;
	}

	private static long removedByFilter(String plan) {
		long removed = 0;
		Matcher matcher = Pattern.compile("Rows Removed by Filter: (\\d+)").matcher(plan);
		while (matcher.find()) {
			removed += Long.parseLong(matcher.group(1));
		}
		return removed;
	}

}
