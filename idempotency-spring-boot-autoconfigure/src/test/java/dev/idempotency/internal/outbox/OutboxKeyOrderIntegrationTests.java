package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.config.TopicConfig;
import org.junit.jupiter.api.Test;

import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Per-key order when one event of a batch fails on its own while the events around it
 * would be accepted, against a real Kafka broker.
 */
class OutboxKeyOrderIntegrationTests {

	/**
	 * The broker refuses an event larger than its topic's {@code max.message.bytes} and
	 * accepts the small events around it. The later event of the key must wait for the
	 * refused one: it is not sent while the refused event is dead, and follows it once
	 * the topic takes it and the dead event is re-queued.
	 */
	@Test
	void anEventTheBrokerRefusesHoldsBackTheLaterEventsOfItsKeyButNotOtherKeys() throws Exception {
		String topic = "it-outbox-too-large-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1, Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "2000"));
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "keyorder",
				"idempotency.outbox.max-attempts=1", "idempotency.outbox.poll-interval=200ms");
				TestConsumer consumer = new TestConsumer(topic)) {
			OutboxRelay relay = context.getBean(OutboxRelay.class);
			relay.stop();
			Outbox outbox = context.getBean(Outbox.class);
			String large = "L".repeat(10_000);
			// one transaction: the relay claims the four events in one batch
			UUID tooLarge = context.getBean(TransactionTemplate.class).execute((status) -> {
				outbox.publish(topic, "key", "first");
				UUID id = outbox.publish(topic, "key", large);
				outbox.publish(topic, "key", "third");
				outbox.publish(topic, "other-key", "unrelated");
				return id;
			});
			relay.start();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(Duration.ofSeconds(30))
				.until(() -> "DEAD".equals(OutboxFixtures.status(jdbc, "keyorder_outbox", tooLarge)));
			// whatever else was going to arrive, arrives in this time
			List<ConsumerRecord<String, String>> received = consumer.receive(3, Duration.ofSeconds(5));
			assertThat(received).extracting(ConsumerRecord::value).containsExactlyInAnyOrder("first", "unrelated");
			assertThat(jdbc.queryForObject("SELECT status FROM keyorder_outbox WHERE aggregate_id = 'key' AND "
					+ "convert_from(payload, 'UTF8') LIKE '%third%'", String.class)).isEqualTo("PENDING");

			// the topic takes the event now; once re-queued, the key resumes in order
			TestInfrastructure.alterTopic(topic, TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "100000");
			assertThat(context.getBean(OutboxDeadLetters.class).requeue(tooLarge)).isTrue();
			List<ConsumerRecord<String, String>> all = consumer.receive(4, Duration.ofSeconds(30));
			assertThat(all).filteredOn((record) -> "key".equals(record.key()))
				.extracting(ConsumerRecord::value)
				.containsExactly("first", large, "third");
		}
	}

	/**
	 * An event over its topic's {@code max.message.bytes} sent in one producer batch with
	 * other keys' events: the broker refuses the batch whole, and the producer splits it
	 * and sends it again until its delivery timeout instead of failing the large event
	 * alone. The timed-out send counts as an attempt of each of them (as every failed send
	 * of this relay does); the next attempt must send them alone, so that the large one
	 * fails as itself and is parked, and the others are published rather than parked
	 * {@code DEAD} beside it.
	 */
	@Test
	void anEventTooLargeForItsTopicSentInOneProducerBatchWithOtherKeysFailsAloneAndIsParked() {
		String topic = "it-outbox-too-large-beside-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1, Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "2000"));
		// a linger puts the events of a wave in one producer batch, as a busy producer would
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "alone",
				"idempotency.outbox.max-attempts=2", "idempotency.outbox.poll-interval=200ms",
				"idempotency.outbox.send-timeout=2s", "idempotency.outbox.initial-backoff=100ms",
				"idempotency.outbox.max-backoff=500ms", "spring.kafka.producer.properties.linger.ms=200",
				"spring.kafka.producer.properties.request.timeout.ms=1000");
				TestConsumer consumer = new TestConsumer(topic)) {
			OutboxRelay relay = context.getBean(OutboxRelay.class);
			relay.stop();
			UUID tooLarge = OutboxFixtures.publishTooLargeBesideOthers(context, topic);
			relay.start();
			OutboxFixtures.assertTooLargeParkedAndOthersPublished(context.getBean(JdbcTemplate.class), "alone_outbox",
					tooLarge, consumer);
		}
	}

}
