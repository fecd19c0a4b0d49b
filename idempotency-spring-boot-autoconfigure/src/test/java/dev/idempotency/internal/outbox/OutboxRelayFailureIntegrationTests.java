package dev.idempotency.internal.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestMeters;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The relay when things fail: a broker that cannot take events for a while, and a relay instance
 * that dies holding a lease.
 */
class OutboxRelayFailureIntegrationTests {

	/**
	 * The broker cannot take the events for a while: their topic's partitions do not exist
	 * yet, so every send fails after {@code max.block.ms}, as it does while the broker is
	 * unreachable. (The embedded KRaft broker cannot be restarted on the same port, so the
	 * outage is simulated on the topic rather than on the whole broker.)
	 */
	@Test
	void eventsBackOffWhileTheBrokerCannotTakeThemThenAllArriveInOrder() {
		String topic = "it-outbox-outage";
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "outage",
				OutboxFixtures.withQuickFailingSends("idempotency.outbox.initial-backoff=200ms",
						"idempotency.outbox.max-backoff=1s", "idempotency.outbox.max-attempts=100",
						"idempotency.outbox.poll-interval=200ms"))) {
			OutboxFixtures.publishInOneTransaction(context, (outbox) -> {
				for (int i = 0; i < 50; i++) {
					outbox.publish(topic, "key-" + (i % 5), Integer.toString(i));
				}
			});
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(Duration.ofSeconds(30))
				.until(() -> TestMeters.count(context, "idempotency.outbox.failures") >= 3);
			assertThat(jdbc.queryForObject("SELECT count(*) FROM outage_outbox WHERE topic = ? AND status = 'PENDING'",
					Integer.class, topic)).isEqualTo(50);
			assertThat(jdbc.queryForObject("SELECT max(attempts) FROM outage_outbox WHERE topic = ?", Integer.class,
					topic)).isGreaterThanOrEqualTo(2);
			TestInfrastructure.createTopic(topic, 2);
			try (TestConsumer consumer = new TestConsumer(topic)) {
				List<ConsumerRecord<String, String>> records = consumer.receive(50, Duration.ofSeconds(60));
				assertThat(records).hasSize(50);
				OutboxFixtures.assertInOrderPerKey(records);
			}
			await().atMost(Duration.ofSeconds(20))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM outage_outbox WHERE topic = ?", Integer.class,
						topic) == 0);
		}
	}

	/**
	 * A send that cannot get its topic's metadata blocks for the producer's
	 * {@code max.block.ms} (60 s by default), one per missing topic, outside the send
	 * timeout's wait for acknowledgments. A batch that outlasted its lease could have
	 * another relay take its keys over and send their later events first. The relay's
	 * producer now blocks for at most half the send timeout, and no send starts after it.
	 */
	@Test
	void aBatchWhoseSendsBlockEndsWithinTheSendTimeoutAndItsLease() {
		String prefix = "it-outbox-blocking-" + UUID.randomUUID() + "-";
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "blocking",
				"idempotency.outbox.send-timeout=1s", "idempotency.outbox.lease=4s",
				"idempotency.outbox.initial-backoff=1m", "idempotency.outbox.poll-interval=200ms")) {
			// four topics that do not exist (the broker does not create topics)
			OutboxFixtures.publishInOneTransaction(context, (outbox) -> {
				for (int i = 0; i < 4; i++) {
					outbox.publish(prefix + i, "key-" + i, Integer.toString(i));
				}
			});
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			long started = System.nanoTime();
			await().atMost(Duration.ofSeconds(20))
				.until(() -> jdbc.queryForObject(
						"SELECT count(*) FROM blocking_outbox WHERE topic LIKE ? AND last_error IS NOT NULL",
						Integer.class, prefix + "%") == 4);
			assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(4));
		}
	}

	/**
	 * A send to a topic the cluster does not have blocks for {@code max.block.ms} and fails
	 * as one to an absent broker does. Each such attempt used to block the batch it was in,
	 * and the other topics' events in it, for that long. The relay now asks the cluster
	 * after such a failure: while it says the topic does not exist, the topic's events fail
	 * as attempts without a send, and the other topics' events go out at once.
	 */
	@Test
	void eventsOfATopicTheClusterDoesNotHaveFailWithoutASendAndHoldUpNoOtherTopic() {
		String missing = "it-outbox-no-such-topic-" + UUID.randomUUID();
		String present = "it-outbox-beside-a-missing-topic-" + UUID.randomUUID();
		TestInfrastructure.createTopic(present, 1);
		// a send to the missing topic blocks for 8 s
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class,
				"nosuchtopic", "spring.kafka.producer.properties[max.block.ms]=8000",
				"idempotency.outbox.send-timeout=20s", "idempotency.outbox.lease=40s",
				"idempotency.outbox.initial-backoff=100ms", "idempotency.outbox.max-backoff=200ms",
				"idempotency.outbox.max-attempts=1000", "idempotency.outbox.poll-interval=100ms")) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			UUID stranded = OutboxFixtures.publish(context, missing, "stranded", "0");
			// the next event of its key, for a topic that exists, waits behind it
			UUID behind = OutboxFixtures.publish(context, present, "stranded", "behind");
			// its first send blocked for max.block.ms, then failed
			await().atMost(Duration.ofSeconds(20)).until(() -> attempts(jdbc, stranded) >= 1);
			int attempts = attempts(jdbc, stranded);
			for (int i = 0; i < 10; i++) {
				OutboxFixtures.publish(context, present, "key-" + (i % 3), Integer.toString(i));
				OutboxFixtures.sleep(Duration.ofMillis(100));
			}
			// sent well within one max.block.ms of the last: no batch waited for a send to
			// the missing topic, due every 100-200 ms all along
			await().atMost(Duration.ofSeconds(4))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM nosuchtopic_outbox WHERE topic = ? AND event_id <> ?",
						Integer.class, present, behind) == 0);
			// an attempt every backoff, none of them blocking: three would have taken 24 s
			await().atMost(Duration.ofSeconds(4)).until(() -> attempts(jdbc, stranded) >= attempts + 3);
			assertThat(jdbc.queryForMap("SELECT status, last_error FROM nosuchtopic_outbox WHERE event_id = ?", stranded))
				.containsEntry("status", "PENDING")
				.hasEntrySatisfying("last_error", (error) -> assertThat(error.toString()).contains(missing)
					.contains("does not exist"));
			assertThat(jdbc.queryForObject("SELECT attempts FROM nosuchtopic_outbox WHERE event_id = ?", Integer.class,
					behind)).isZero();
			try (TestConsumer consumer = new TestConsumer(present)) {
				List<ConsumerRecord<String, String>> records = consumer.receive(10, Duration.ofSeconds(30));
				assertThat(records).hasSize(10);
				OutboxFixtures.assertInOrderPerKey(records);
			}
			// created, the topic gets the event at its next attempt, then the event behind it goes
			TestInfrastructure.createTopic(missing, 1);
			try (TestConsumer consumer = new TestConsumer(missing)) {
				assertThat(consumer.receive(1, Duration.ofSeconds(30))).hasSize(1);
			}
			try (TestConsumer consumer = new TestConsumer(present)) {
				List<ConsumerRecord<String, String>> records = consumer.receive(11, Duration.ofSeconds(30));
				assertThat(records).hasSize(11);
				assertThat(records.get(records.size() - 1).value()).isEqualTo("behind");
			}
		}
	}

	private static int attempts(JdbcTemplate jdbc, UUID event) {
		Integer attempts = jdbc.queryForObject("SELECT attempts FROM nosuchtopic_outbox WHERE event_id = ?",
				Integer.class, event);
		return (attempts != null) ? attempts : 0;
	}

	@Test
	void eventsOfARelayThatDiedHoldingTheirLeaseAreDeliveredByAnotherAndAppliedOnce() {
		String topic = "it-outbox-failover";
		TestInfrastructure.createTopic(topic, 1);
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(Consumer.class, "failover",
				"idempotency.outbox.lease=2s", "idempotency.outbox.send-timeout=1s",
				"idempotency.outbox.poll-interval=200ms", "test.topic=" + topic)) {
			OutboxRelay relay = context.getBean(OutboxRelay.class);
			relay.stop();
			OutboxFixtures.publishInOneTransaction(context, (outbox) -> {
				for (int i = 0; i < 20; i++) {
					outbox.publish(topic, "key-" + (i % 4), Integer.toString(i));
				}
			});
			// another relay claims the events, sends them, and dies before marking them sent
			List<OutboxRecord> claimed = context.getBean(OutboxRepository.class)
				.claim("relay-that-dies", Duration.ofSeconds(2));
			assertThat(claimed).hasSize(20);
			sendAsTheDeadRelayDid(claimed);
			relay.start();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			// after the lease expired, this relay delivers them again; the consumer skips the copies
			await().atMost(Duration.ofSeconds(30))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM failover_outbox WHERE topic = ?", Integer.class,
						topic) == 0);
			try (TestConsumer consumer = new TestConsumer(topic)) {
				assertThat(consumer.receive(40, Duration.ofSeconds(20))).hasSize(40);
			}
			await().atMost(Duration.ofSeconds(20))
				.until(() -> TestMeters.count(context, "idempotency.messages", "outcome", "duplicate") == 20);
			assertThat(jdbc.queryForObject("SELECT count(*) FROM failover_effects", Integer.class)).isEqualTo(20);
			assertThat(context.getBean(TestEffects.class).keys("failover")).doesNotHaveDuplicates().hasSize(20);
		}
	}

	private static void sendAsTheDeadRelayDid(List<OutboxRecord> events) {
		Properties properties = new Properties();
		properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, TestInfrastructure.kafkaBootstrapServers());
		try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(properties, new StringSerializer(),
				new ByteArraySerializer())) {
			for (OutboxRecord event : events) {
				ProducerRecord<String, byte[]> record = new ProducerRecord<>(event.topic(), event.key(),
						event.payload());
				record.headers()
					.add(OutboxRelay.IDEMPOTENCY_KEY_HEADER, event.eventId().toString().getBytes(StandardCharsets.UTF_8));
				producer.send(record);
			}
			producer.flush();
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class Consumer {

		@Bean
		TestEffects effects(JdbcTemplate jdbc) {
			return new TestEffects(jdbc, "failover_effects");
		}

		@Bean
		Failover failover(TestEffects effects) {
			return new Failover(effects);
		}

	}

	static class Failover {

		private final TestEffects effects;

		Failover(TestEffects effects) {
			this.effects = effects;
		}

		@KafkaListener(id = "failover", topics = "${test.topic}", groupId = "failover")
		@Idempotent
		public void on(String sequence) {
			this.effects.add("failover", sequence);
		}

	}

}
