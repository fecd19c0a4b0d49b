package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.CommonDelegatingErrorHandler;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter's exceptions that no retry can cure go straight to the recoverer of a
 * {@code DefaultErrorHandler} inside a {@link CommonDelegatingErrorHandler} too; with an
 * unlimited back-off they would otherwise block their partition for good.
 */
class DelegatingErrorHandlerIntegrationTests {

	private static final String TOPIC = "it-delegating";

	@Test
	void aRecordWithoutKeyReachesTheDelegatesRecovererAtOnce() {
		TestInfrastructure.createTopic(TOPIC, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.missing-key=reject")) {
			Listener listener = context.getBean(Listener.class);
			String keyed = UUID.randomUUID().toString();
			TestKafka.send(TOPIC, 0, "no-key", Map.of());
			TestKafka.send(TOPIC, 0, keyed, Map.of("X-Idempotency-Key", keyed));
			TestKafka.awaitCommitted("delegating", new TopicPartition(TOPIC, 0), Duration.ofSeconds(30));
			assertThat(listener.recovered()).containsExactly("no-key");
			assertThat(listener.exceptions().get(0)).isInstanceOf(IdempotencyKeyMissingException.class);
			assertThat(context.getBean(JdbcTemplate.class)
				.queryForObject("SELECT count(*) FROM delegating_effects WHERE message = ?", Integer.class, keyed))
				.isEqualTo(1);
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS delegating_effects (message TEXT NOT NULL)");
			return new Listener(jdbc);
		}

		// retries without end unless told an exception is not retryable
		@Bean
		CommonDelegatingErrorHandler errorHandler(Listener listener) {
			CommonDelegatingErrorHandler handler = new CommonDelegatingErrorHandler(
					new DefaultErrorHandler(listener::recover, new FixedBackOff(50, FixedBackOff.UNLIMITED_ATTEMPTS)));
			handler.addDelegate(IllegalArgumentException.class, new DefaultErrorHandler(listener::recover,
					new FixedBackOff(50, FixedBackOff.UNLIMITED_ATTEMPTS)));
			return handler;
		}

	}

	static class Listener {

		private final JdbcTemplate jdbc;

		private final List<String> recovered = new CopyOnWriteArrayList<>();

		private final List<Throwable> exceptions = new CopyOnWriteArrayList<>();

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "delegating", topics = TOPIC, groupId = "delegating")
		@Idempotent
		public void on(String value) {
			this.jdbc.update("INSERT INTO delegating_effects (message) VALUES (?)", value);
		}

		void recover(ConsumerRecord<?, ?> record, Exception ex) {
			this.recovered.add((String) record.value());
			this.exceptions.add(NestedExceptionUtils.getMostSpecificCause(ex));
		}

		List<String> recovered() {
			return this.recovered;
		}

		List<Throwable> exceptions() {
			return this.exceptions;
		}

	}

}
