package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.Outbox;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestInfrastructure;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code idempotency.outbox.oldest.age} reads the age of the event pending now, not the
 * age of an event seen in a snapshot that has long been sent: a real Kafka broker and a
 * real PostgreSQL, under a steady load whose events leave in milliseconds.
 */
class OutboxOldestAgeIntegrationTests {

	@RegisterExtension
	static final TestApplication app = TestApplication.of(OutboxFixtures.Writer.class)
		.properties(OutboxFixtures.relayOn("aging"));

	@Test
	void oldestAgeStaysNearTheRealLatencyUnderSteadyLoad() throws InterruptedException {
		String topic = "it-outbox-steady";
		TestInfrastructure.createTopic(topic, 1);
		TransactionTemplate transactions = app.bean(TransactionTemplate.class);
		Outbox outbox = app.bean(Outbox.class);
		AtomicBoolean publishing = new AtomicBoolean(true);
		AtomicInteger published = new AtomicInteger();
		// a steady stream, about a hundred events a second, that the relay keeps up with
		Thread publisher = new Thread(() -> {
			while (publishing.get()) {
				transactions.executeWithoutResult((status) -> outbox.publish(topic, "k", "v"));
				published.incrementAndGet();
				OutboxFixtures.sleep(Duration.ofMillis(5));
			}
		});
		publisher.start();
		TimeGauge oldestAge = registry().get("idempotency.outbox.oldest.age").timeGauge();
		double highest = 0;
		// longer than the 10 s between two snapshots of the whole table
		long end = System.nanoTime() + Duration.ofSeconds(15).toNanos();
		while (System.nanoTime() < end) {
			highest = Math.max(highest, oldestAge.value(TimeUnit.MILLISECONDS));
			Thread.sleep(20);
		}
		publishing.set(false);
		publisher.join();
		assertThat(published.get()).isGreaterThan(100);
		// No event waited longer than the latency timer's maximum: the gauge, which ages the
		// last read until the next, one relay cycle later, may add at most one cycle to it.
		// A cycle takes no longer than the latency of an event that waited for it (on a
		// loaded machine, seconds; on a quiet one, milliseconds), so the gauge stays within
		// twice the latency's maximum, with a little room; a gauge read from the snapshots
		// of the whole table, 10 s apart, would not.
		Timer latency = registry().get("idempotency.outbox.latency").tag("topic", topic).timer();
		assertThat(highest)
			.as("highest age read; latency max %.0f ms, mean %.1f ms", latency.max(TimeUnit.MILLISECONDS),
					latency.mean(TimeUnit.MILLISECONDS))
			.isLessThan(2 * latency.max(TimeUnit.MILLISECONDS) + 500.0);
		// and once everything has left, it reads 0
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(oldestAge.value(TimeUnit.MILLISECONDS)).isZero());
		assertThat(registry().get("idempotency.outbox.latency").tag("topic", topic).timer().count())
			.isEqualTo(published.get());
	}

	private static MeterRegistry registry() {
		return app.bean(MeterRegistry.class);
	}

}
