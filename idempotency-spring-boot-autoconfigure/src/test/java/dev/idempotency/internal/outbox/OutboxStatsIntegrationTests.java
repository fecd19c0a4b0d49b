package dev.idempotency.internal.outbox;

import java.time.Instant;

import dev.idempotency.internal.store.TableName;
import dev.idempotency.outbox.OutboxStats;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestInfrastructure;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.transaction.support.TransactionTemplate;

import static dev.idempotency.internal.outbox.OutboxRepository.MAX_COUNTED;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The statistics of the outbox (the health details and the pending and dead gauges) count
 * a backlog only up to {@link OutboxRepository#MAX_COUNTED} events, so that reading them
 * costs the same whatever the backlog: on a real PostgreSQL, with a backlog written in one
 * burst whose table statistics lag behind it, as they do for a fresh backlog, and most of
 * whose pending events were held back (as in a broker outage), which puts them in the
 * index of blocking events beside the dead ones.
 */
class OutboxStatsIntegrationTests {

	private static final String TABLE = "stats_outbox";

	private static final int PENDING = 3 * MAX_COUNTED;

	private static final int HELD_BACK = 2 * MAX_COUNTED;

	private static final int DEAD = 2 * MAX_COUNTED;

	@RegisterExtension
	static final TestApplication app = TestApplication.of(OutboxFixtures.Writer.class)
		.properties(OutboxFixtures.onTable("stats"));

	@BeforeAll
	static void writeABacklog() {
		JdbcTemplate jdbc = app.jdbc();
		jdbc.update("DELETE FROM " + TABLE);
		// no ANALYZE of the burst: the planner still believes the table small
		jdbc.execute("ALTER TABLE " + TABLE + " SET (autovacuum_enabled = false)");
		jdbc.update("INSERT INTO " + TABLE + " (event_id, aggregate_id, topic, payload, last_error) "
				+ "SELECT gen_random_uuid(), 'k' || g, 't', '\\x00'::bytea, "
				+ "CASE WHEN g <= ? THEN 'Held back: an earlier send to its topic failed' END "
				+ "FROM generate_series(1, ?) AS g", HELD_BACK, PENDING);
		// keys after those of the held-back events, in the index of blocking events
		jdbc.update("INSERT INTO " + TABLE + " (event_id, aggregate_id, topic, payload, status, attempts, last_error) "
				+ "SELECT gen_random_uuid(), 'z' || g, 't', '\\x00'::bytea, 'DEAD', 10, 'timeout' "
				+ "FROM generate_series(1, ?) AS g", DEAD);
	}

	@Test
	void countsABacklogUpToTheBoundAndReadsTheOldestPendingEventAtTheHeadOfTheIndex() {
		OutboxStats stats = app.bean(OutboxRepository.class).stats();
		assertThat(stats.pending()).isEqualTo(MAX_COUNTED + 1);
		assertThat(stats.dead()).isEqualTo(MAX_COUNTED + 1);
		assertThat(stats.oldest()).isEqualTo(app.jdbc()
			.queryForObject("SELECT min(created_at) FROM " + TABLE + " WHERE status = 'PENDING'", Instant.class));
	}

	@Test
	void readsAtMostTheCountedRowsOfABacklogMuchLargerThanTheBound() {
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		SingleConnectionDataSource session = new SingleConnectionDataSource(postgres.jdbcUrl(), postgres.username(),
				postgres.password(), true);
		try {
			JdbcTemplate jdbc = new JdbcTemplate(session);
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(session));
			OutboxRepository repository = new OutboxRepository(jdbc, transactions, new TableName(null, TABLE), 500);
			long before = rowsRead(jdbc);
			repository.stats();
			// each count stops after MAX_COUNTED + 1 rows, and the oldest pending event is
			// the first entry of the pending index; counting the table would read all
			// PENDING + DEAD rows, a bitmap scan every entry of an index, and a count of the
			// dead events on the index of blocking events every held-back event first
			assertThat(rowsRead(jdbc) - before).isLessThanOrEqualTo(2L * (MAX_COUNTED + 1) + 1);
		}
		finally {
			session.destroy();
		}
	}

	@Test
	void countsEveryDeadEventForTheDeadLetterOperations() {
		OutboxRepository repository = app.bean(OutboxRepository.class);
		assertThat(new JdbcOutboxDeadLetters(repository, () -> {
		}).count()).isEqualTo(DEAD);
	}

	/**
	 * Return the rows and index entries this session's scans have read from the outbox
	 * table and its indexes, once the session's statistics are written.
	 */
	private static long rowsRead(JdbcTemplate session) {
		session.execute("SELECT pg_stat_force_next_flush()");
		return session.queryForObject("""
				SELECT t.seq_tup_read + coalesce((SELECT sum(i.idx_tup_read) FROM pg_stat_user_indexes i
				                                  WHERE i.relid = t.relid), 0)
				FROM pg_stat_user_tables t WHERE t.relname = ?
				""", Long.class, TABLE);
	}

}
