package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.Outbox;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
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
 * The relay's latency timer and the age of the oldest pending event, against a real
 * Kafka broker and a real PostgreSQL.
 */
class OutboxMetersIntegrationTests {

	private static ConfigurableApplicationContext context;

	private static MeterRegistry registry;

	@BeforeAll
	static void start() {
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA, TestApplications.WITH_RELAY,
				"idempotency.outbox.table=metered_outbox", "idempotency.flyway.table=metered_schema_history",
				"idempotency.outbox.initial-backoff=10m", "idempotency.outbox.max-backoff=10m",
				"idempotency.outbox.poll-interval=200ms", "spring.kafka.producer.properties[max.block.ms]=500",
				"spring.kafka.producer.properties[delivery.timeout.ms]=1500",
				"spring.kafka.producer.properties[request.timeout.ms]=1000");
		registry = context.getBean(MeterRegistry.class);
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void latencyRunsFromTheInsertInTheCommittingTransactionToTheAcknowledgment() {
		String topic = "it-outbox-latency";
		TestInfrastructure.createTopic(topic, 1);
		context.getBean(TransactionTemplate.class).executeWithoutResult((status) -> {
			context.getBean(Outbox.class).publish(topic, "k", "v");
			// the rest of the business transaction, before the commit
			sleep(Duration.ofMillis(300));
		});
		await().atMost(Duration.ofSeconds(20))
			.until(() -> registry.find("idempotency.outbox.latency").tag("topic", topic).timer() != null);
		Timer latency = registry.get("idempotency.outbox.latency").tag("topic", topic).timer();
		assertThat(latency.count()).isOne();
		assertThat(latency.totalTime(TimeUnit.MILLISECONDS)).isBetween(300.0, 20_000.0);
	}

	@Test
	void oldestAgeIsTheAgeOfTheOldestPendingEvent() {
		// the topic does not exist: the event fails once, then waits ten minutes
		String missing = "it-outbox-aging-" + UUID.randomUUID().toString().substring(0, 8);
		Instant beforeInsert = Instant.now();
		context.getBean(TransactionTemplate.class)
			.executeWithoutResult((status) -> context.getBean(Outbox.class).publish(missing, "k", "stuck"));
		Instant afterCommit = Instant.now();
		TimeGauge oldestAge = registry.get("idempotency.outbox.oldest.age").timeGauge();
		// read after every relay cycle
		await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
			long atLeast = Duration.between(afterCommit, Instant.now()).toMillis();
			double age = oldestAge.value(TimeUnit.MILLISECONDS);
			long atMost = Duration.between(beforeInsert, Instant.now()).toMillis();
			assertThat(age).isBetween(atLeast - 50.0, atMost + 50.0);
		});
		// refreshed every 10 seconds
		await().atMost(Duration.ofSeconds(30))
			.untilAsserted(() -> assertThat(registry.get("idempotency.outbox.pending").gauge().value()).isEqualTo(1.0));
	}

	private static void sleep(Duration duration) {
		try {
			Thread.sleep(duration.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

	}

}
