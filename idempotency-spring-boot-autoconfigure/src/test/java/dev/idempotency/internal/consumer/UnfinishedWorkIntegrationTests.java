package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

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
 * Listeners that return normally although their work will not commit with their claim.
 * Such a record must not count as processed and have its offset committed with nothing
 * applied: it fails, rolls back and goes to the error handler.
 */
class UnfinishedWorkIntegrationTests {

	private static final String FUTURES = "it-unfinished-future";

	private static final String ABORTED = "it-unfinished-aborted";

	private static final String ABORTED_BATCHES = "it-unfinished-aborted-batch";

	private static ConfigurableApplicationContext context;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(FUTURES, 1);
		TestInfrastructure.createTopic(ABORTED, 1);
		TestInfrastructure.createTopic(ABORTED_BATCHES, 1);
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA);
		jdbc = context.getBean(JdbcTemplate.class);
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	/**
	 * A listener declared to return {@code Object} that returns work still under way (a
	 * future) passes the start-up check, which sees the declared type only; spring-kafka
	 * treats the returned future as asynchronous work all the same, and its failure would
	 * come after the claim committed.
	 */
	@Test
	void aFutureReturnedAtRunTimeIsRefusedAndTheRecordGoesToTheRecoverer() {
		String key = sendAndAwaitRecovery(FUTURES, "still under way");
		assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_messages WHERE idempotency_key = ?",
				Integer.class, key))
			.as("claims of the record").isZero();
		// the work was cancelled before it started
		await().pollDelay(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(2)).until(() -> true);
		assertThat(effects(key)).isZero();
	}

	/**
	 * A listener that catches the failure of one of its own statements returns normally,
	 * but PostgreSQL has aborted the transaction: its commit rolls everything back, the
	 * claim included, and the driver reports a normal commit.
	 */
	@ParameterizedTest
	@ValueSource(strings = { ABORTED, ABORTED_BATCHES })
	void aListenerThatSwallowsAFailedStatementFailsItsRecord(String topic) {
		String key = sendAndAwaitRecovery(topic, "aborted");
		assertThat(effects(key)).isZero();
	}

	private static String sendAndAwaitRecovery(String topic, String failure) {
		String key = UUID.randomUUID().toString();
		TestKafka.send(topic, 0, key, Map.of("X-Idempotency-Key", key));
		RecordingBatches recorded = context.getBean(RecordingBatches.class);
		await().atMost(Duration.ofSeconds(30))
			.until(() -> recorded.recovered().stream().anyMatch((record) -> key.equals(record.value())));
		assertThat(recorded.exceptions()).anySatisfy((exception) -> assertThat(exception).hasMessageContaining(failure));
		return key;
	}

	private static int effects(String key) {
		return jdbc.queryForObject("SELECT count(*) FROM unfinished_effects WHERE message_key = ?", Integer.class, key);
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
			jdbc.execute("CREATE TABLE IF NOT EXISTS unfinished_effects (message_key TEXT NOT NULL)");
			jdbc.execute("CREATE TABLE IF NOT EXISTS unfinished_unique (id INT PRIMARY KEY)");
			jdbc.execute("INSERT INTO unfinished_unique VALUES (1) ON CONFLICT DO NOTHING");
			return new Listener(jdbc);
		}

	}

	static class Listener {

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(topics = FUTURES, groupId = "unfinished-future")
		@Idempotent
		public Object future(String payload) {
			// runs, and fails, once the claim has long committed
			return CompletableFuture.runAsync(() -> {
				this.jdbc.update("INSERT INTO unfinished_effects (message_key) VALUES (?)", payload);
				throw new IllegalStateException("downstream unavailable");
			}, CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS));
		}

		@KafkaListener(topics = ABORTED, groupId = "unfinished-aborted")
		@Idempotent
		public void aborted(String payload) {
			insertTwice(payload);
		}

		@KafkaListener(topics = ABORTED_BATCHES, groupId = "unfinished-aborted-batch", batch = "true")
		@Idempotent
		public void abortedBatch(List<String> payloads) {
			payloads.forEach(this::insertTwice);
		}

		private void insertTwice(String payload) {
			this.jdbc.update("INSERT INTO unfinished_effects (message_key) VALUES (?)", payload);
			try {
				this.jdbc.update("INSERT INTO unfinished_unique VALUES (1)");
			}
			catch (DuplicateKeyException ex) {
				// "already there, fine": but PostgreSQL has aborted the transaction
			}
		}

	}

}
