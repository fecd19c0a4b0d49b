package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;

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

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(FUTURES, ABORTED, ABORTED_BATCHES)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=unfinished_effects");

	/**
	 * A listener declared to return {@code Object} that returns work still under way (a
	 * future) passes the start-up check, which sees the declared type only; spring-kafka
	 * treats the returned future as asynchronous work all the same, and its failure would
	 * come after the claim committed.
	 */
	@Test
	void aFutureReturnedAtRunTimeIsRefusedAndTheRecordGoesToTheRecoverer() {
		String key = sendAndAwaitRecovery(FUTURES, "still under way");
		assertThat(app.rows("SELECT count(*) FROM processed_messages WHERE idempotency_key = ?", key))
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
		app.send(topic, key, key);
		RecordingBatches recorded = app.bean(RecordingBatches.class);
		await().atMost(TestApplication.TIMEOUT)
			.until(() -> recorded.recovered().stream().anyMatch((record) -> key.equals(record.value())));
		assertThat(recorded.exceptions()).anySatisfy((exception) -> assertThat(exception).hasMessageContaining(failure));
		return key;
	}

	private static int effects(String key) {
		return app.bean(TestEffects.class).count("listener", key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ RecordingBatches.class, RecordingBatches.RecoveringErrorHandler.class })
	static class App {

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS unfinished_unique (id INT PRIMARY KEY)");
			jdbc.execute("INSERT INTO unfinished_unique VALUES (1) ON CONFLICT DO NOTHING");
			return new Listener(jdbc);
		}

	}

	static class Listener extends RecordingListener {

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(topics = FUTURES, groupId = "unfinished-future")
		@Idempotent
		public Object future(String payload) {
			// runs, and fails, once the claim has long committed
			return CompletableFuture.runAsync(() -> {
				effects().add("listener", payload);
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
			effects().add("listener", payload);
			try {
				this.jdbc.update("INSERT INTO unfinished_unique VALUES (1)");
			}
			catch (DuplicateKeyException ex) {
				// "already there, fine": but PostgreSQL has aborted the transaction
			}
		}

	}

}
