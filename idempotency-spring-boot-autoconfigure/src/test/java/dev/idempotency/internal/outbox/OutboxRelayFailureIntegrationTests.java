package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.Outbox;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestConsumer;
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
import org.springframework.transaction.support.TransactionTemplate;

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
		try (ConfigurableApplicationContext context = TestApplications.run(Writer.class, TestApplications.WITHOUT_JPA,
				TestApplications.WITH_RELAY, "idempotency.outbox.table=outage_outbox",
				"idempotency.flyway.table=outage_schema_history", "idempotency.outbox.initial-backoff=200ms",
				"idempotency.outbox.max-backoff=1s", "idempotency.outbox.max-attempts=100",
				"idempotency.outbox.poll-interval=200ms", "spring.kafka.producer.properties[max.block.ms]=500",
				"spring.kafka.producer.properties[delivery.timeout.ms]=1500",
				"spring.kafka.producer.properties[request.timeout.ms]=1000")) {
			Outbox outbox = context.getBean(Outbox.class);
			context.getBean(TransactionTemplate.class).executeWithoutResult((status) -> {
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
				Map<String, Integer> lastByKey = new HashMap<>();
				for (ConsumerRecord<String, String> record : records) {
					int sequence = Integer.parseInt(record.value());
					Integer last = lastByKey.put(record.key(), sequence);
					if (last != null) {
						assertThat(sequence).as("order of %s", record.key()).isGreaterThan(last);
					}
				}
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
		try (ConfigurableApplicationContext context = TestApplications.run(Writer.class, TestApplications.WITHOUT_JPA,
				TestApplications.WITH_RELAY, "idempotency.outbox.table=blocking_outbox",
				"idempotency.flyway.table=blocking_schema_history", "idempotency.outbox.send-timeout=1s",
				"idempotency.outbox.lease=4s", "idempotency.outbox.initial-backoff=1m",
				"idempotency.outbox.poll-interval=200ms")) {
			Outbox outbox = context.getBean(Outbox.class);
			// four topics that do not exist (the broker does not create topics)
			context.getBean(TransactionTemplate.class).executeWithoutResult((status) -> {
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

	@Test
	void eventsOfARelayThatDiedHoldingTheirLeaseAreDeliveredByAnotherAndAppliedOnce() {
		String topic = "it-outbox-failover";
		TestInfrastructure.createTopic(topic, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(Consumer.class, TestApplications.WITHOUT_JPA,
				TestApplications.WITH_RELAY, "idempotency.outbox.table=failover_outbox",
				"idempotency.flyway.table=failover_schema_history", "idempotency.outbox.lease=2s",
				"idempotency.outbox.send-timeout=1s", "idempotency.outbox.poll-interval=200ms", "test.topic=" + topic)) {
			OutboxRelay relay = context.getBean(OutboxRelay.class);
			relay.stop();
			Outbox outbox = context.getBean(Outbox.class);
			context.getBean(TransactionTemplate.class).executeWithoutResult((status) -> {
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
			assertThat(jdbc.queryForObject("SELECT count(DISTINCT sequence) FROM failover_effects", Integer.class))
				.isEqualTo(20);
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
	static class Writer {

	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class Consumer {

		@Bean
		Effects effects(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS failover_effects (id BIGSERIAL PRIMARY KEY, sequence TEXT NOT NULL)");
			return new Effects(jdbc);
		}

	}

	static class Effects {

		private final JdbcTemplate jdbc;

		Effects(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "failover", topics = "${test.topic}", groupId = "failover")
		@Idempotent
		public void on(String sequence) {
			this.jdbc.update("INSERT INTO failover_effects (sequence) VALUES (?)", sequence);
		}

	}

}
