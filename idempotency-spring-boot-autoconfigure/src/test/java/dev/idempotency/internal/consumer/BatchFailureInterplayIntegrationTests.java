package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A record without key under {@code missing-key: reject} in the same batch as a
 * listener's own failure or nack: every record is applied once or reaches the
 * recoverer, whichever comes first in the batch.
 */
class BatchFailureInterplayIntegrationTests {

	private static final String FAILED = "it-interplay-failed";

	private static final String NACKED = "it-interplay-nacked";

	@Test
	void recordWithoutKeyBeforeAFailedOneReachesTheRecoverer() {
		application(FAILED, "idempotency.missing-key=reject").run((app) -> {
			String run = UUID.randomUUID().toString();
			app.send(FAILED, run + "-no-key", null);
			app.send(FAILED, run + "-poison", run + "-poison");
			app.send(FAILED, run + "-good", run + "-good");
			startAndAwaitConsumed(app, "interplay-failed", FAILED);
			Listeners listeners = app.bean(Listeners.class);
			assertThat(listeners.recovered()).containsExactly(run + "-no-key", run + "-poison");
			assertThat(listeners.exceptions().get(0)).isInstanceOf(IdempotencyKeyMissingException.class);
			assertThat(effects(app, run + "-good")).isEqualTo(1);
		});
	}

	@Test
	void nackBeforeARecordWithoutKeyHandsTheRecordsBackFromTheNack() {
		application(NACKED, "idempotency.missing-key=reject", "spring.kafka.listener.ack-mode=manual",
				"spring.kafka.listener.poll-timeout=200ms")
			.run((app) -> {
				String run = UUID.randomUUID().toString();
				Listeners listeners = app.bean(Listeners.class);
				listeners.nackOnce(run + "-b");
				app.send(NACKED, run + "-a", run + "-a");
				app.send(NACKED, run + "-b", run + "-b");
				app.send(NACKED, run + "-no-key", null);
				startAndAwaitConsumed(app, "interplay-nacked", NACKED);
				assertThat(effects(app, run + "-a")).isEqualTo(1);
				assertThat(effects(app, run + "-b")).isEqualTo(1);
				assertThat(listeners.recovered()).containsExactly(run + "-no-key");
			});
	}

	/**
	 * An application for one test: each needs properties of its own.
	 */
	private static TestApplication application(String topic, String... properties) {
		return TestApplication.of(App.class)
			.topics(topic)
			.properties(TestApplications.WITHOUT_JPA, "test.effects-table=interplay_effects")
			.properties(properties);
	}

	// the listeners start stopped, so that the records sent before arrive in one batch;
	// each listener's group is named after its id
	private static void startAndAwaitConsumed(TestApplication app, String listener, String topic) {
		app.container(listener).start();
		app.awaitCommitted(listener, topic);
	}

	private static int effects(TestApplication app, String value) {
		return app.bean(TestEffects.class).count("listeners", value);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Listeners.class)
	static class App {

		@Bean
		DefaultErrorHandler errorHandler(Listeners listeners) {
			return new DefaultErrorHandler(listeners::recover, new FixedBackOff(0, 1));
		}

	}

	static class Listeners extends RecordingListener {

		private final List<String> recovered = new CopyOnWriteArrayList<>();

		private final List<Throwable> exceptions = new CopyOnWriteArrayList<>();

		private final Set<String> nackOnce = ConcurrentHashMap.newKeySet();

		@KafkaListener(id = "interplay-failed", topics = FAILED, groupId = "interplay-failed", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void failing(List<ConsumerRecord<String, String>> records) {
			for (int i = 0; i < records.size(); i++) {
				if (records.get(i).value().endsWith("-poison")) {
					throw new BatchListenerFailedException("Poison", i);
				}
				insert(records.get(i).value());
			}
		}

		@KafkaListener(id = "interplay-nacked", topics = NACKED, groupId = "interplay-nacked", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void nacking(List<ConsumerRecord<String, String>> records, Acknowledgment acknowledgment) {
			for (int i = 0; i < records.size(); i++) {
				if (this.nackOnce.remove(records.get(i).value())) {
					acknowledgment.nack(i, Duration.ofMillis(10));
					return;
				}
				insert(records.get(i).value());
			}
			acknowledgment.acknowledge();
		}

		private void insert(String value) {
			effects().add("listeners", value);
		}

		public void nackOnce(String value) {
			this.nackOnce.add(value);
		}

		public void recover(ConsumerRecord<?, ?> record, Exception ex) {
			this.recovered.add((String) record.value());
			this.exceptions.add(NestedExceptionUtils.getMostSpecificCause(ex));
		}

		public List<String> recovered() {
			return this.recovered;
		}

		public List<Throwable> exceptions() {
			return this.exceptions;
		}

	}

}
