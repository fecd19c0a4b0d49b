package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A listener that catches the failure of one of its own statements returns normally, but
 * PostgreSQL has aborted the transaction: its commit rolls everything back, the claim
 * included, without an error (the driver reports a normal commit). The record must not
 * count as processed and have its offset committed with nothing applied: it fails, and
 * goes to the error handler.
 */
class AbortedTransactionIntegrationTests {

	private static final String TOPIC = "it-aborted-transaction";

	private static ConfigurableApplicationContext context;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(TOPIC, 1);
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA);
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void aListenerThatSwallowsAFailedStatementFailsItsRecord() {
		String key = UUID.randomUUID().toString();
		TestKafka.send(TOPIC, 0, key, Map.of("X-Idempotency-Key", key));
		RecordingBatches recorded = context.getBean(RecordingBatches.class);
		await().atMost(Duration.ofSeconds(30))
			.until(() -> recorded.recovered().stream().anyMatch((record) -> key.equals(record.value())));
		assertThat(recorded.exceptions()).anySatisfy((failure) -> assertThat(failure).hasMessageContaining("aborted"));
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM aborted_effects WHERE message_key = ?", Integer.class,
				key))
			.isZero();
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		RecordingBatches recorded() {
			return new RecordingBatches();
		}

		@Bean
		DefaultErrorHandler errorHandler(RecordingBatches recorded) {
			return new DefaultErrorHandler(recorded::recover, new FixedBackOff(0, 1));
		}

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS aborted_effects (message_key TEXT NOT NULL)");
			jdbc.execute("CREATE TABLE IF NOT EXISTS aborted_unique (id INT PRIMARY KEY)");
			jdbc.execute("INSERT INTO aborted_unique VALUES (1) ON CONFLICT DO NOTHING");
			return new Listener(jdbc);
		}

	}

	static class Listener {

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(topics = TOPIC, groupId = "aborted-transaction")
		@Idempotent
		public void on(String payload) {
			this.jdbc.update("INSERT INTO aborted_effects (message_key) VALUES (?)", payload);
			try {
				this.jdbc.update("INSERT INTO aborted_unique VALUES (1)");
			}
			catch (DuplicateKeyException ex) {
				// "already there, fine": but PostgreSQL has aborted the transaction
			}
		}

	}

}
