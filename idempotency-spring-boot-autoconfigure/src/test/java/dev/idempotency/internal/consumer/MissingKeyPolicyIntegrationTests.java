package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code reject} and {@code skip} missing-key policies against a real broker and
 * database. ({@code record-coordinates}, the default, is covered by
 * {@link IdempotentListenerIntegrationTests}.)
 */
class MissingKeyPolicyIntegrationTests {

	@Test
	void rejectHandsTheRecordToTheErrorHandlerWithoutInvokingTheListener() {
		String topic = "it-reject";
		consumeAKeylessThenAKeyedRecord("reject", topic, (app, keyed) -> {
			Policy listener = app.bean(Policy.class);
			assertThat(listener.received()).containsExactly(keyed);
			assertThat(app.bean(Recovered.class).exceptions())
				.singleElement()
				.isInstanceOf(IdempotencyKeyMissingException.class);
			assertThat(rejected(app)).isEqualTo(1.0);
			assertThat(app.rows("SELECT count(*) FROM processed_messages WHERE consumer_group = ?", topic))
				.isEqualTo(1);
		});
	}

	@Test
	void skipAcknowledgesTheRecordWithoutInvokingTheListener() {
		consumeAKeylessThenAKeyedRecord("skip", "it-skip", (app, keyed) -> {
			assertThat(app.bean(Policy.class).received()).containsExactly(keyed);
			assertThat(app.bean(Recovered.class).exceptions()).isEmpty();
			assertThat(rejected(app)).isEqualTo(1.0);
		});
	}

	/**
	 * Run an application with a missing-key policy and its listener (and group) on a
	 * topic, send it a record without key, then one with a key, wait until both are
	 * consumed, and check the outcome while the application runs.
	 */
	private static void consumeAKeylessThenAKeyedRecord(String policy, String topic,
			BiConsumer<TestApplication, String> then) {
		TestApplication.of(App.class)
			.topics(topic)
			.properties(TestApplications.WITHOUT_JPA, "idempotency.missing-key=" + policy, "test.topic=" + topic)
			.run((app) -> {
				String keyed = UUID.randomUUID().toString();
				app.send(topic, "no-key", null);
				app.send(topic, keyed, keyed);
				app.awaitCommitted(topic, topic);
				then.accept(app, keyed);
			});
	}

	private static double rejected(TestApplication app) {
		return app.count("idempotency.messages", "listener", "Policy.on", "outcome", "rejected", "source", "none");
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ Policy.class, Recovered.class })
	static class App {

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
