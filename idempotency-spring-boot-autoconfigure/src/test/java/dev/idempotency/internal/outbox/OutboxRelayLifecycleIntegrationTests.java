package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.OutboxProducerFactoryCustomizer;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestMeters;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.ProducerFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Which instances relay, and what a relay leaves behind when it stops, against a real
 * Kafka broker and a real PostgreSQL.
 */
class OutboxRelayLifecycleIntegrationTests {

	@Test
	void anInstanceWithTheRelaySwitchedOffWritesEventsButPublishesNone() {
		String topic = "it-outbox-no-relay";
		TestInfrastructure.createTopic(topic, 1);
		UUID eventId;
		try (ConfigurableApplicationContext writer = TestApplications.run(OutboxFixtures.Writer.class,
				OutboxFixtures.onTable("norelay", "idempotency.outbox.relay-enabled=false"));
				TestConsumer consumer = new TestConsumer(topic)) {
			assertThat(writer.getBeanProvider(OutboxRelay.class).getIfAvailable()).isNull();
			eventId = OutboxFixtures.publish(writer, topic, "k", "written");
			assertThat(consumer.receive(1, Duration.ofSeconds(3))).isEmpty();
			assertThat(writer.getBean(JdbcTemplate.class)
				.queryForObject("SELECT status || ':' || attempts || ':' || (SELECT count(*) FROM norelay_outbox_claims) "
						+ "FROM norelay_outbox WHERE event_id = ?", String.class, eventId)).isEqualTo("PENDING:0:0");
		}
		// the event was fine: an instance that relays publishes it
		try (ConfigurableApplicationContext relay = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "norelay");
				TestConsumer consumer = new TestConsumer(topic)) {
			assertThat(consumer.receive(1, Duration.ofSeconds(20))).singleElement()
				.satisfies((record) -> assertThat(TestConsumer.header(record, OutboxRelay.IDEMPOTENCY_KEY_HEADER))
					.isEqualTo(eventId.toString()));
		}
	}

	/**
	 * A relay whose batch could not be recorded (here the database refuses the deletes of
	 * completion) keeps its leases while it runs; when it stops, it releases them, so that
	 * another instance publishes the events at once rather than after the lease.
	 */
	@Test
	void aRelayThatStopsReleasesItsLeasesSoAnotherInstancePublishesAtOnce() {
		String topic = "it-outbox-release";
		TestInfrastructure.createTopic(topic, 1);
		String[] properties = { "idempotency.outbox.lease=10m", "idempotency.outbox.poll-interval=200ms" };
		try (ConfigurableApplicationContext first = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "release",
				properties);
				TestConsumer consumer = new TestConsumer(topic)) {
			JdbcTemplate jdbc = first.getBean(JdbcTemplate.class);
			jdbc.execute("""
					CREATE OR REPLACE FUNCTION refuse_release_outbox_delete() RETURNS trigger LANGUAGE plpgsql AS $$
					BEGIN RAISE EXCEPTION 'deletes refused by the test'; END $$;
					CREATE TRIGGER refuse_delete BEFORE DELETE ON release_outbox
					    FOR EACH ROW EXECUTE FUNCTION refuse_release_outbox_delete();
					""");
			OutboxFixtures.publishInOneTransaction(first, (outbox) -> {
				for (int i = 0; i < 3; i++) {
					outbox.publish(topic, "key-" + i, Integer.toString(i));
				}
			});
			assertThat(consumer.receive(3, Duration.ofSeconds(20))).hasSize(3);
			assertThat(jdbc.queryForObject("SELECT cardinality(key_hashes) FROM release_outbox_claims",
					Integer.class)).isEqualTo(3);
			first.getBean(OutboxRelay.class).stop();
			assertThat(jdbc.queryForObject("SELECT count(*) FROM release_outbox_claims", Integer.class)).isZero();
			assertThat(jdbc.queryForObject("SELECT count(*) FROM release_outbox", Integer.class)).isEqualTo(3);
			jdbc.execute("DROP TRIGGER refuse_delete ON release_outbox");
			try (ConfigurableApplicationContext second = OutboxFixtures.runRelay(OutboxFixtures.Writer.class,
					"release", properties)) {
				// long before the ten-minute lease would have expired
				await().atMost(Duration.ofSeconds(20))
					.until(() -> jdbc.queryForObject("SELECT count(*) FROM release_outbox", Integer.class) == 0);
				assertThat(TestMeters.count(second, "idempotency.outbox.published", "topic", topic)).isEqualTo(3.0);
				// each event twice, under one event id
				List<ConsumerRecord<String, String>> records = consumer.receive(6, Duration.ofSeconds(20));
				assertThat(records).hasSize(6)
					.extracting((record) -> TestConsumer.header(record, OutboxRelay.IDEMPOTENCY_KEY_HEADER))
					.doesNotContainNull()
					.satisfies((eventIds) -> assertThat(Set.copyOf(eventIds)).hasSize(3));
			}
		}
	}

	/**
	 * A relay that did not stop within the shutdown timeout (here its claim waits on a
	 * lock) and is started again runs one loop, not two under one owner: the loop left
	 * behind ends once it gets free.
	 */
	@Test
	void aRelayStartedAgainAfterAStopThatTimedOutRunsOneLoop() throws Exception {
		long before = relayLoops();
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "restart",
				"idempotency.outbox.shutdown-timeout=100ms", "idempotency.outbox.poll-interval=50ms",
				"idempotency.outbox.idle-poll-interval=50ms")) {
			OutboxRelay relay = context.getBean(OutboxRelay.class);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			DataSource dataSource = context.getBean(DataSource.class);
			try (Connection blocker = dataSource.getConnection()) {
				blocker.setAutoCommit(false);
				try (Statement statement = blocker.createStatement()) {
					statement.execute("LOCK TABLE restart_outbox_claims IN ACCESS EXCLUSIVE MODE");
				}
				await().atMost(Duration.ofSeconds(20)).until(() -> jdbc.queryForObject(
						"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%restart_outbox_claims%'",
						Integer.class) > 0);
				relay.stop();
				assertThat(relayLoops()).as("the loop waiting on the lock").isEqualTo(before + 1);
				relay.start();
				assertThat(relayLoops()).isEqualTo(before + 2);
				blocker.rollback();
			}
			await().atMost(Duration.ofSeconds(20)).until(() -> relayLoops() == before + 1);
			Thread.sleep(500);
			assertThat(relayLoops()).isEqualTo(before + 1);
			assertThat(relay.isRunning()).isTrue();
		}
	}

	/**
	 * A relay stopped while it waits for a batch's acknowledgments is interrupted after
	 * the shutdown timeout. Whether the broker took the events is not known then: they are
	 * sent again, but the interruption is not a failed attempt of theirs (counted, a few
	 * rolling restarts would make them DEAD).
	 */
	@Test
	void aRelayStoppedWhileItAwaitsAcknowledgmentsCountsNoAttempt() throws Exception {
		String topic = "it-outbox-stopped-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1);
		SlowAcknowledgments.delay = Duration.ofSeconds(3);
		SlowAcknowledgments.acknowledging = new java.util.concurrent.CountDownLatch(1);
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "stopped",
				"idempotency.outbox.shutdown-timeout=100ms", "idempotency.outbox.poll-interval=50ms",
				"idempotency.outbox.initial-backoff=1m",
				"spring.kafka.producer.properties[interceptor.classes]=" + SlowAcknowledgments.class.getName())) {
			OutboxFixtures.publishInOneTransaction(context, (outbox) -> {
				for (int i = 0; i < 3; i++) {
					outbox.publish(topic, "key-" + i, Integer.toString(i));
				}
			});
			assertThat(SlowAcknowledgments.acknowledging.await(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
			context.getBean(OutboxRelay.class).stop();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(Duration.ofSeconds(20))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM stopped_outbox WHERE last_error IS NOT NULL",
						Integer.class) == 3);
			assertThat(jdbc.queryForList("SELECT attempts FROM stopped_outbox", Integer.class)).containsOnly(0);
		}
		finally {
			SlowAcknowledgments.delay = Duration.ZERO;
		}
	}

	/**
	 * Holds the producer's I/O thread in every acknowledgment, so that the relay is still
	 * waiting for them when it is stopped.
	 */
	public static class SlowAcknowledgments implements org.apache.kafka.clients.producer.ProducerInterceptor<Object, Object> {

		static volatile Duration delay = Duration.ZERO;

		static volatile java.util.concurrent.CountDownLatch acknowledging = new java.util.concurrent.CountDownLatch(0);

		@Override
		public org.apache.kafka.clients.producer.ProducerRecord<Object, Object> onSend(
				org.apache.kafka.clients.producer.ProducerRecord<Object, Object> record) {
			return record;
		}

		@Override
		public void onAcknowledgement(org.apache.kafka.clients.producer.RecordMetadata metadata, Exception exception) {
			acknowledging.countDown();
			try {
				Thread.sleep(delay.toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}

		@Override
		public void close() {
		}

		@Override
		public void configure(Map<String, ?> configs) {
		}

	}

	private static long relayLoops() {
		return Thread.getAllStackTraces()
			.keySet()
			.stream()
			.filter((thread) -> thread.isAlive() && thread.getName().equals("idempotency-outbox-relay"))
			.count();
	}

	/**
	 * With auto-startup off the relay bean exists but publishes nothing until the
	 * application starts it; it sends through the producer factory the customizers saw.
	 */
	@Test
	void aRelayThatDoesNotStartWithTheApplicationPublishesOnceStartedThroughTheCustomizedProducer() {
		String topic = "it-outbox-auto-startup";
		TestInfrastructure.createTopic(topic, 1);
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(CustomizedApp.class, "startup",
				"idempotency.outbox.auto-startup=false");
				TestConsumer consumer = new TestConsumer(topic)) {
			OutboxRelay relay = context.getBean(OutboxRelay.class);
			assertThat(relay.isAutoStartup()).isFalse();
			assertThat(relay.isRunning()).isFalse();
			UUID eventId = OutboxFixtures.publish(context, topic, "k", "later");
			assertThat(consumer.receive(1, Duration.ofSeconds(2))).isEmpty();
			ProducersSeen producers = context.getBean(ProducersSeen.class);
			assertThat(producers.clientIds).isEmpty();
			relay.start();
			assertThat(relay.isRunning()).isTrue();
			assertThat(consumer.receive(1, Duration.ofSeconds(20))).singleElement()
				.satisfies((record) -> assertThat(TestConsumer.header(record, OutboxRelay.IDEMPOTENCY_KEY_HEADER))
					.isEqualTo(eventId.toString()));
			assertThat(producers.clientIds).singleElement().asString().contains("outbox-relay-under-test");
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class CustomizedApp {

		@Bean
		ProducersSeen producersSeen() {
			return new ProducersSeen();
		}

		@Bean
		OutboxProducerFactoryCustomizer clientId() {
			return (factory) -> factory.updateConfigs(Map.of(ProducerConfig.CLIENT_ID_CONFIG, "outbox-relay-under-test"));
		}

		@Bean
		OutboxProducerFactoryCustomizer watchProducers(ProducersSeen producers) {
			return (factory) -> factory.addListener(producers);
		}

	}

	static class ProducersSeen implements ProducerFactory.Listener<String, byte[]> {

		final List<String> clientIds = new CopyOnWriteArrayList<>();

		@Override
		public void producerAdded(String id, Producer<String, byte[]> producer) {
			this.clientIds.add(id);
		}

	}

}
