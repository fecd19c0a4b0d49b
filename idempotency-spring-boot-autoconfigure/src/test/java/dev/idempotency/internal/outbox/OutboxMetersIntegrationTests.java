package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestInfrastructure;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The relay's latency timer and the age of the oldest pending event, against a real
 * Kafka broker and a real PostgreSQL.
 */
class OutboxMetersIntegrationTests {

	@RegisterExtension
	static final TestApplication app = TestApplication.of(OutboxFixtures.Writer.class)
		.properties(OutboxFixtures.relayOn("metered", "idempotency.outbox.initial-backoff=10m",
				"idempotency.outbox.max-backoff=10m", "idempotency.outbox.poll-interval=200ms"))
		.properties(OutboxFixtures.QUICK_FAILING_SENDS);

	@Test
	void latencyRunsFromTheInsertInTheCommittingTransactionToTheAcknowledgment() {
		String topic = "it-outbox-latency";
		TestInfrastructure.createTopic(topic, 1);
		OutboxFixtures.publishInOneTransaction(app.context(), (outbox) -> {
			outbox.publish(topic, "k", "v");
			// the rest of the business transaction, before the commit
			OutboxFixtures.sleep(Duration.ofMillis(300));
		});
		await().atMost(Duration.ofSeconds(20))
			.until(() -> registry().find("idempotency.outbox.latency").tag("topic", topic).timer() != null);
		Timer latency = registry().get("idempotency.outbox.latency").tag("topic", topic).timer();
		assertThat(latency.count()).isOne();
		assertThat(latency.totalTime(TimeUnit.MILLISECONDS)).isBetween(300.0, 20_000.0);
	}

	@Test
	void oldestAgeIsTheAgeOfTheOldestPendingEvent() {
		// the topic does not exist: the event fails once, then waits ten minutes
		String missing = "it-outbox-aging-" + UUID.randomUUID().toString().substring(0, 8);
		Instant beforeInsert = Instant.now();
		OutboxFixtures.publish(app.context(), missing, "k", "stuck");
		Instant afterCommit = Instant.now();
		TimeGauge oldestAge = registry().get("idempotency.outbox.oldest.age").timeGauge();
		// read after every relay cycle
		await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
			long atLeast = Duration.between(afterCommit, Instant.now()).toMillis();
			double age = oldestAge.value(TimeUnit.MILLISECONDS);
			long atMost = Duration.between(beforeInsert, Instant.now()).toMillis();
			assertThat(age).isBetween(atLeast - 50.0, atMost + 50.0);
		});
		// refreshed every 10 seconds
		await().atMost(Duration.ofSeconds(30))
			.untilAsserted(() -> assertThat(registry().get("idempotency.outbox.pending").gauge().value()).isEqualTo(1.0));
	}

	private static MeterRegistry registry() {
		return app.bean(MeterRegistry.class);
	}

}
