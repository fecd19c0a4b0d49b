package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A transactional listener whose key is held by a lease-mode claim of the same scope that
 * is still in progress waits for it, as a lease-mode listener does, instead of skipping
 * the record as a duplicate of work that may yet be released: skipped, the record would be
 * acknowledged and never applied.
 */
class LeaseRowsInTransactionalClaimsIntegrationTests {

	private static final String GROUP = "lease-rows";

	@Test
	void waitsForALeaseInProgressAndAppliesTheRecordOnceItIsReleased() {
		String topic = "it-lease-rows-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1);
		String key = "held-" + UUID.randomUUID();
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"test.topic=" + topic, "idempotency.infrastructure-retry.initial-interval=200ms",
				"idempotency.infrastructure-retry.max-interval=500ms")) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			// a lease-mode consumer of the same scope is working on the key
			jdbc.update("INSERT INTO processed_messages (consumer_group, idempotency_key, status, fencing_token, "
					+ "lease_until) VALUES (?, ?, 'IN_PROGRESS', 1, now() + interval '1 minute')", GROUP, key);
			TestKafka.send(topic, 0, key, Map.of("X-Idempotency-Key", key));

			// neither applied nor acknowledged while the lease is held
			await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10))
				.until(() -> effects(jdbc, key) == 0 && TestKafka.committedOffset(GROUP, new TopicPartition(topic, 0)) <= 0);

			// the lease-mode attempt fails and releases its claim
			jdbc.update("DELETE FROM processed_messages WHERE consumer_group = ? AND idempotency_key = ?", GROUP, key);
			TestKafka.awaitCommitted(GROUP, new TopicPartition(topic, 0), Duration.ofSeconds(30));
			assertThat(effects(jdbc, key)).isEqualTo(1);
		}
	}

	private static int effects(JdbcTemplate jdbc, String key) {
		return jdbc.queryForObject("SELECT count(*) FROM lease_rows_effects WHERE message_key = ?", Integer.class, key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Effects effects(JdbcTemplate jdbc) {
			jdbc.execute(
					"CREATE TABLE IF NOT EXISTS lease_rows_effects (id BIGSERIAL PRIMARY KEY, message_key TEXT NOT NULL)");
			return new Effects(jdbc);
		}

	}

	static class Effects {

		private final JdbcTemplate jdbc;

		Effects(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(topics = "${test.topic}", groupId = GROUP)
		@Idempotent
		public void apply(String key) {
			this.jdbc.update("INSERT INTO lease_rows_effects (message_key) VALUES (?)", key);
		}

	}

}
