package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.consumer.ListenerFixtures.Recovered;
import dev.idempotency.internal.consumer.ListenerFixtures.RecoveringErrorHandler;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code idempotency.lease.fingerprint-mismatch=warn}: a record with a known key and
 * another payload is counted and skipped, not sent to the recoverer; the fingerprint is of
 * a SpEL expression, so a change elsewhere in the payload is a duplicate.
 */
class LeaseFingerprintWarnIntegrationTests {

	private static final String TOPIC = "it-lease-fingerprint-warn";

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Payments.class, RecoveringErrorHandler.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.error-handler.retries=0",
				"idempotency.lease.fingerprint-mismatch=warn");

	@Test
	void recordWithAKnownKeyAndAnotherPayloadIsCountedAndSkipped() {
		String key = UUID.randomUUID().toString();
		app.send(TOPIC, "10 EUR note=first", key);
		// same amount, another note: the expression fingerprints the amount only
		app.send(TOPIC, "10 EUR note=again", key);
		app.send(TOPIC, "99 EUR note=first", key);
		app.awaitCommitted(TOPIC, TOPIC);
		assertThat(app.bean(Payments.class).values()).containsExactly("10 EUR note=first");
		assertThat(app.bean(Recovered.class).failures).isEmpty();
		assertThat(app.count("idempotency.fingerprint.mismatches", "listener", "Payments.on", "policy", "warn"))
			.isEqualTo(1);
		assertThat(app.count("idempotency.messages", "listener", "Payments.on", "outcome", "duplicate")).isEqualTo(1);
		assertThat(app.count("idempotency.messages", "listener", "Payments.on", "outcome", "rejected")).isEqualTo(1);
	}

	static class Payments {

		private final List<String> values = new CopyOnWriteArrayList<>();

		@KafkaListener(topics = TOPIC, groupId = TOPIC)
		@Idempotent(mode = Idempotent.Mode.LEASE, fingerprintExpression = "payload.substring(0, payload.indexOf(' note'))")
		public void on(String payment) {
			this.values.add(payment);
		}

		// the bean is a proxy: the test reaches its state through methods, not fields
		public List<String> values() {
			return this.values;
		}

	}

}
