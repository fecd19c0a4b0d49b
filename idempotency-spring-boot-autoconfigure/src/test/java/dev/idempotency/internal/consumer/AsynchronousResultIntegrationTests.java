package dev.idempotency.internal.consumer;

import java.time.Duration;
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

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A listener declared to return {@code Object} that returns work still under way (a
 * future) passes the start-up check, which sees the declared type only; spring-kafka
 * treats the returned future as asynchronous work all the same. Its claim must not commit
 * before that work is done: the record is refused and handed to the error handler.
 */
class AsynchronousResultIntegrationTests {

	private static final String TOPIC = "it-async-result";

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
	void aFutureReturnedAtRunTimeIsRefusedAndTheRecordGoesToTheRecoverer() {
		String key = UUID.randomUUID().toString();
		TestKafka.send(TOPIC, 0, key, Map.of("X-Idempotency-Key", key));
		RecordingBatches recorded = context.getBean(RecordingBatches.class);
		await().atMost(Duration.ofSeconds(30))
			.until(() -> recorded.recovered().stream().anyMatch((record) -> key.equals(record.value())));
		assertThat(recorded.exceptions()).anySatisfy((failure) -> assertThat(failure).hasMessageContaining("still under way"));
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_messages WHERE idempotency_key = ?",
				Integer.class, key))
			.as("claims of the record").isZero();
		// the work was cancelled before it started
		await().pollDelay(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(2)).until(() -> true);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM async_result_effects WHERE message_key = ?",
				Integer.class, key))
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
			jdbc.execute("CREATE TABLE IF NOT EXISTS async_result_effects (message_key TEXT NOT NULL)");
			return new Listener(jdbc);
		}

	}

	static class Listener {

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(topics = TOPIC, groupId = "async-result")
		@Idempotent
		public Object on(String payload) {
			// fails on its first run, when the claim has long committed
			return CompletableFuture.runAsync(() -> {
				this.jdbc.update("INSERT INTO async_result_effects (message_key) VALUES (?)", payload);
				throw new IllegalStateException("downstream unavailable");
			}, CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS));
		}

	}

}
