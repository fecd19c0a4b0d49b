package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestMeters;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code idempotency.lease.fingerprint-mismatch=warn}: a record with a known key and
 * another payload is counted and skipped, not sent to the recoverer; the fingerprint is of
 * a SpEL expression, so a change elsewhere in the payload is a duplicate.
 */
class LeaseFingerprintWarnIntegrationTests {

	private static final String TOPIC = "it-lease-fingerprint-warn";

	@Test
	void recordWithAKnownKeyAndAnotherPayloadIsCountedAndSkipped() {
		TestInfrastructure.createTopic(TOPIC, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.lease.fingerprint-mismatch=warn")) {
			String key = UUID.randomUUID().toString();
			TestKafka.send(TOPIC, 0, "10 EUR note=first", Map.of("X-Idempotency-Key", key));
			// same amount, another note: the expression fingerprints the amount only
			TestKafka.send(TOPIC, 0, "10 EUR note=again", Map.of("X-Idempotency-Key", key));
			TestKafka.send(TOPIC, 0, "99 EUR note=first", Map.of("X-Idempotency-Key", key));
			TestKafka.awaitCommitted(TOPIC, new TopicPartition(TOPIC, 0), Duration.ofSeconds(30));
			assertThat(context.getBean(Seen.class).values).containsExactly("10 EUR note=first");
			assertThat(context.getBean(Seen.class).recovered).isEmpty();
			assertThat(TestMeters.count(context, "idempotency.fingerprint.mismatches", "listener", "Payments.on",
					"policy", "warn"))
				.isEqualTo(1);
			assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Payments.on", "outcome",
					"duplicate"))
				.isEqualTo(1);
			assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Payments.on", "outcome",
					"rejected"))
				.isEqualTo(1);
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Seen seen() {
			return new Seen();
		}

		@Bean
		Payments payments(Seen seen) {
			return new Payments(seen);
		}

		@Bean
		DefaultErrorHandler errorHandler(Seen seen) {
			return new DefaultErrorHandler((record, ex) -> seen.recovered.add(ex), new FixedBackOff(0, 0));
		}

	}

	static class Seen {

		final List<String> values = new CopyOnWriteArrayList<>();

		final List<Throwable> recovered = new CopyOnWriteArrayList<>();

	}

	static class Payments {

		private final Seen seen;

		Payments(Seen seen) {
			this.seen = seen;
		}

		@KafkaListener(topics = TOPIC, groupId = TOPIC)
		@Idempotent(mode = Idempotent.Mode.LEASE, fingerprintExpression = "payload.substring(0, payload.indexOf(' note'))")
		public void on(String payment) {
			this.seen.values.add(payment);
		}

	}

}
