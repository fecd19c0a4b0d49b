package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.common.TopicPartition;
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
 * The {@code reject} and {@code skip} missing-key policies against a real broker and
 * database. ({@code record-coordinates}, the default, is covered by
 * {@link IdempotentListenerIntegrationTests}.)
 */
class MissingKeyPolicyIntegrationTests {

	@Test
	void rejectHandsTheRecordToTheErrorHandlerWithoutInvokingTheListener() {
		String topic = "it-reject";
		TestInfrastructure.createTopic(topic, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.missing-key=reject", "test.topic=" + topic)) {
			String keyed = UUID.randomUUID().toString();
			TestKafka.send(topic, 0, "no-key", Map.of());
			TestKafka.send(topic, 0, keyed, Map.of("X-Idempotency-Key", keyed));
			awaitConsumed(topic);
			Policy listener = context.getBean(Policy.class);
			assertThat(listener.received()).containsExactly(keyed);
			assertThat(context.getBean(Recovered.class).exceptions())
				.singleElement()
				.isInstanceOf(IdempotencyKeyMissingException.class);
			assertThat(rejected(context)).isEqualTo(1.0);
			assertThat(context.getBean(JdbcTemplate.class)
				.queryForObject("SELECT count(*) FROM processed_messages WHERE consumer_group = ?", Integer.class,
						topic))
				.isEqualTo(1);
		}
	}

	@Test
	void skipAcknowledgesTheRecordWithoutInvokingTheListener() {
		String topic = "it-skip";
		TestInfrastructure.createTopic(topic, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.missing-key=skip", "test.topic=" + topic)) {
			String keyed = UUID.randomUUID().toString();
			TestKafka.send(topic, 0, "no-key", Map.of());
			TestKafka.send(topic, 0, keyed, Map.of("X-Idempotency-Key", keyed));
			awaitConsumed(topic);
			assertThat(context.getBean(Policy.class).received()).containsExactly(keyed);
			assertThat(context.getBean(Recovered.class).exceptions()).isEmpty();
			assertThat(rejected(context)).isEqualTo(1.0);
		}
	}

	private static void awaitConsumed(String topic) {
		TestKafka.awaitCommitted(topic, new TopicPartition(topic, 0), Duration.ofSeconds(30));
	}

	private static double rejected(ConfigurableApplicationContext context) {
		return context.getBean(MeterRegistry.class)
			.get("idempotency.messages")
			.tags("listener", "Policy.on", "outcome", "rejected", "source", "none")
			.counter()
			.count();
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Policy policy() {
			return new Policy();
		}

		@Bean
		Recovered recovered() {
			return new Recovered();
		}

		@Bean
		DefaultErrorHandler errorHandler(Recovered recovered) {
			return new DefaultErrorHandler((record, ex) -> recovered.add(ex.getCause()), new FixedBackOff(0, 0));
		}

	}

	static class Recovered {

		private final List<Throwable> exceptions = new CopyOnWriteArrayList<>();

		void add(Throwable ex) {
			this.exceptions.add(ex);
		}

		List<Throwable> exceptions() {
			return this.exceptions;
		}

	}

	static class Policy {

		private final List<String> received = new CopyOnWriteArrayList<>();

		@KafkaListener(id = "policy", topics = "${test.topic}", groupId = "${test.topic}")
		@Idempotent
		public void on(String payload) {
			this.received.add(payload);
		}

		public List<String> received() {
			return this.received;
		}

	}

}
