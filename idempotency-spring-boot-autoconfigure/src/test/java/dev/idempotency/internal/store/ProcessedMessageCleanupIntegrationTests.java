package dev.idempotency.internal.store;

import java.time.Duration;
import java.util.UUID;

import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestMeters;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The scheduled retention cleanup of an application, on a real PostgreSQL: keys older
 * than {@code idempotency.store.jdbc.retention} are deleted every
 * {@code idempotency.store.jdbc.cleanup-interval}, younger ones stay, and an interval of
 * zero never deletes. Each application has a schema of its own, so that the counts are
 * its rows only.
 */
class ProcessedMessageCleanupIntegrationTests {

	@Test
	void deletesKeysOlderThanTheRetentionOnItsScheduleAndCountsThem() {
		try (ConfigurableApplicationContext context = run("cleanup_scheduled", "200ms")) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String run = UUID.randomUUID().toString();
			insert(jdbc, "cleanup_scheduled", run + "-young", 5, "50 minutes");
			insert(jdbc, "cleanup_scheduled", run + "-old", 25, "61 minutes");
			await().atMost(Duration.ofSeconds(30)).until(() -> rows(jdbc, "cleanup_scheduled", run + "-old") == 0);
			assertThat(rows(jdbc, "cleanup_scheduled", run + "-young")).isEqualTo(5);
			assertThat(TestMeters.count(context, "idempotency.cleanup.deleted")).isEqualTo(25.0);
			// a lease-mode claim older than the retention whose lease is live is kept
			jdbc.update("INSERT INTO cleanup_scheduled.processed_messages (consumer_group, idempotency_key, "
					+ "processed_at, status, fencing_token, lease_until) VALUES ('cleanup', ?, now() - interval "
					+ "'2 hours', 'IN_PROGRESS', 1, now() + interval '1 hour')", run + "-leased-0");
			// not a one-off at start-up: keys that expire later are deleted too
			insert(jdbc, "cleanup_scheduled", run + "-later", 10, "2 days");
			await().atMost(Duration.ofSeconds(30)).until(() -> rows(jdbc, "cleanup_scheduled", run + "-later") == 0);
			assertThat(rows(jdbc, "cleanup_scheduled", run + "-young")).isEqualTo(5);
			assertThat(rows(jdbc, "cleanup_scheduled", run + "-leased")).isEqualTo(1);
			assertThat(TestMeters.count(context, "idempotency.cleanup.deleted")).isEqualTo(35.0);
		}
	}

	@Test
	void anIntervalOfZeroNeverDeletes() {
		try (ConfigurableApplicationContext context = run("cleanup_off", "0")) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String run = UUID.randomUUID().toString();
			insert(jdbc, "cleanup_off", run + "-old", 10, "2 days");
			assertThat(context.getBean(ProcessedMessageCleanup.class).isRunning()).isFalse();
			await().during(Duration.ofSeconds(2))
				.atMost(Duration.ofSeconds(3))
				.until(() -> rows(jdbc, "cleanup_off", run + "-old") == 10);
			assertThat(TestMeters.count(context, "idempotency.cleanup.deleted")).isZero();
		}
	}

	/**
	 * Start an application whose store, in a schema of its own, keeps keys for an hour.
	 */
	private static ConfigurableApplicationContext run(String schema, String cleanupInterval) {
		return TestApplications.run(App.class, TestApplications.WITHOUT_JPA, "idempotency.store.jdbc.schema=" + schema,
				"idempotency.store.jdbc.retention=1h", "idempotency.store.jdbc.cleanup-interval=" + cleanupInterval);
	}

	private static void insert(JdbcTemplate jdbc, String schema, String prefix, int count, String age) {
		for (int i = 0; i < count; i++) {
			jdbc.update("INSERT INTO " + schema + ".processed_messages (consumer_group, idempotency_key, processed_at) "
					+ "VALUES ('cleanup', ?, now() - ?::interval)", prefix + "-" + i, age);
		}
	}

	private static int rows(JdbcTemplate jdbc, String schema, String prefix) {
		return jdbc.queryForObject("SELECT count(*) FROM " + schema + ".processed_messages WHERE idempotency_key LIKE ?",
				Integer.class, prefix + "-%");
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

	}

}
