package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.core.NestedExceptionUtils;
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

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=delegating_effects",
				"idempotency.missing-key=reject");

	@Test
	void aRecordWithoutKeyReachesTheDelegatesRecovererAtOnce() {
		Listener listener = app.bean(Listener.class);
		String keyed = UUID.randomUUID().toString();
		app.send(TOPIC, "no-key", null);
		app.send(TOPIC, keyed, keyed);
		app.awaitCommitted("delegating", TOPIC);
		assertThat(listener.recovered()).containsExactly("no-key");
		assertThat(listener.exceptions().get(0)).isInstanceOf(IdempotencyKeyMissingException.class);
		assertThat(app.bean(TestEffects.class).count("delegating", keyed)).isEqualTo(1);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Listener.class)
	static class App {
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

	static class Listener extends RecordingListener {

		private final List<String> recovered = new CopyOnWriteArrayList<>();

		private final List<Throwable> exceptions = new CopyOnWriteArrayList<>();

		@KafkaListener(id = "delegating", topics = TOPIC, groupId = "delegating")
		@Idempotent
		public void on(String value) {
			effects().add("delegating", value);
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
