package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.OutboxDeadLetters;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What becomes of sent events ({@code completion: mark}) and of dead ones
 * ({@link OutboxDeadLetters#requeueAll()}), against a real Kafka broker and a real
 * PostgreSQL.
 */
class OutboxCompletionIntegrationTests {

	@RegisterExtension
	static final TestApplication app = TestApplication.of(OutboxFixtures.Writer.class)
		.properties(OutboxFixtures.relayOn("marked", "idempotency.outbox.completion=mark",
				"idempotency.outbox.retention=2s", "idempotency.outbox.max-attempts=1",
				"idempotency.outbox.initial-backoff=200ms", "idempotency.outbox.poll-interval=200ms"))
		.properties(OutboxFixtures.QUICK_FAILING_SENDS);

	@Test
	void sentEventsAreMarkedSentAndPurgedOnceTheRetentionHasPassed() {
		String topic = "it-outbox-marked";
		TestInfrastructure.createTopic(topic, 1);
		UUID eventId = publish(topic, "order-1", "placed");
		try (TestConsumer consumer = new TestConsumer(topic)) {
			assertThat(consumer.receive(1, Duration.ofSeconds(20))).hasSize(1);
		}
		await().atMost(Duration.ofSeconds(10)).until(() -> "SENT".equals(status(eventId)));
		Map<String, Object> sent = app.jdbc().queryForMap(
				"SELECT sent_at, (SELECT count(*) FROM marked_outbox_claims) AS claims FROM marked_outbox WHERE event_id = ?",
				eventId);
		assertThat(sent.get("sent_at")).isNotNull();
		// the claim was given back with the completion
		assertThat(sent.get("claims")).isEqualTo(0L);
		// the relay purges every 10 seconds; the row goes only once it is older than the retention
		await().atMost(Duration.ofSeconds(40)).until(() -> status(eventId) == null);
		assertThat(app.jdbc().queryForObject("SELECT now() - ?::timestamptz >= interval '2 seconds'", Boolean.class,
				sent.get("sent_at"))).isTrue();
	}

	private static final String PADDING = "x".repeat(2000);

	@Test
	void requeueAllPutsEveryDeadEventBackInLineAndTheEventsBehindThemFollow() {
		String topic = "it-outbox-requeue-all-" + UUID.randomUUID().toString().substring(0, 8);
		// the topic refuses events over 1,000 bytes: these fail as events, and one attempt
		// is the maximum
		TestInfrastructure.createTopic(topic, 1, Map.of("max.message.bytes", "1000"));
		publish(topic, "account-1", "a1" + PADDING);
		publish(topic, "account-2", "b1" + PADDING);
		OutboxDeadLetters deadLetters = app.bean(OutboxDeadLetters.class);
		await().atMost(Duration.ofSeconds(30)).until(() -> deadLetters.count() == 2);
		publish(topic, "account-1", "a2");
		TestInfrastructure.alterTopic(topic, "max.message.bytes", "1048588");
		assertThat(deadLetters.requeueAll()).isEqualTo(2);
		try (TestConsumer consumer = new TestConsumer(topic)) {
			List<ConsumerRecord<String, String>> records = consumer.receive(3, Duration.ofSeconds(30));
			assertThat(records).extracting(ConsumerRecord::value)
				.containsExactlyInAnyOrder("a1" + PADDING, "b1" + PADDING, "a2");
			assertThat(records).filteredOn((record) -> "account-1".equals(record.key()))
				.extracting(ConsumerRecord::value)
				.containsExactly("a1" + PADDING, "a2");
		}
		assertThat(deadLetters.count()).isZero();
		assertThat(deadLetters.requeueAll()).isZero();
	}

	private static UUID publish(String topic, String key, String payload) {
		return OutboxFixtures.publish(app.context(), topic, key, payload);
	}

	private static String status(UUID eventId) {
		return OutboxFixtures.status(app.jdbc(), "marked_outbox", eventId);
	}

}
