package dev.idempotency.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code idempotency.outbox.oldest.age} reads the age of the event pending now, not the
 * age of an event seen in a snapshot that has long been sent: a real Kafka broker and a
 * real PostgreSQL, under a steady load whose events leave in milliseconds.
 */
class OutboxOldestAgeIntegrationTests {

	private static ConfigurableApplicationContext context;

	private static MeterRegistry registry;

	@BeforeAll
	static void start() {
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA, TestApplications.WITH_RELAY,
				"idempotency.outbox.table=aging_outbox", "idempotency.flyway.table=aging_schema_history");
		registry = context.getBean(MeterRegistry.class);
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void oldestAgeStaysNearTheRealLatencyUnderSteadyLoad() throws InterruptedException {
		String topic = "it-outbox-steady";
		TestInfrastructure.createTopic(topic, 1);
		TransactionTemplate transactions = context.getBean(TransactionTemplate.class);
		Outbox outbox = context.getBean(Outbox.class);
		AtomicBoolean publishing = new AtomicBoolean(true);
		AtomicInteger published = new AtomicInteger();
		List<Thread> publishers = new ArrayList<>();
		for (int i = 0; i < 2; i++) {
			Thread publisher = new Thread(() -> {
				while (publishing.get()) {
					transactions.executeWithoutResult((status) -> outbox.publish(topic, "k", "v"));
					published.incrementAndGet();
				}
			});
			publisher.start();
			publishers.add(publisher);
		}
		TimeGauge oldestAge = registry.get("idempotency.outbox.oldest.age").timeGauge();
		double highest = 0;
		// longer than the 10 s between two snapshots of the whole table
		long end = System.nanoTime() + Duration.ofSeconds(12).toNanos();
		while (System.nanoTime() < end) {
			highest = Math.max(highest, oldestAge.value(TimeUnit.MILLISECONDS));
			Thread.sleep(20);
		}
		publishing.set(false);
		for (Thread publisher : publishers) {
			publisher.join();
		}
		assertThat(published.get()).isGreaterThan(100);
		// the relay keeps up: events leave within milliseconds; the gauge must not read seconds
		assertThat(highest).isLessThan(1000.0);
		// and once everything has left, it reads 0
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(oldestAge.value(TimeUnit.MILLISECONDS)).isZero());
		assertThat(registry.get("idempotency.outbox.latency").tag("topic", topic).timer().count())
			.isEqualTo(published.get());
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

	}

}
