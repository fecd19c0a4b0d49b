package dev.idempotency.internal.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestProxy;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The replication relay against a real PostgreSQL (wal_level = logical) and a real Kafka
 * broker: what it sends, in which order, and what it leaves in the table.
 */
class OutboxReplicationRelayIntegrationTests {

	private final List<String> slots = new ArrayList<>();

	@AfterEach
	void dropSlots() {
		this.slots.forEach(ReplicationFixtures::dropSlot);
	}

	@Test
	void relaysEventsInCommitOrderPerKeyWithTheirIdsAndEmptiesTheTable() {
		String name = slot("replorder");
		String topic = topic();
		Map<String, String> published = new ConcurrentHashMap<>();
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(name);
				TestConsumer consumer = new TestConsumer(topic)) {
			// one event per transaction, and several events of several keys per transaction
			for (int i = 0; i < 60; i++) {
				String value = "key-" + (i % 6) + ":" + i;
				published.put(value, OutboxFixtures.publish(context, topic, "key-" + (i % 6), value).toString());
			}
			for (int t = 0; t < 20; t++) {
				int first = 100 + t * 5;
				OutboxFixtures.publishInOneTransaction(context, (outbox) -> {
					for (int i = first; i < first + 5; i++) {
						String value = "key-" + (i % 3) + ":" + i;
						published.put(value, outbox.publish(topic, "key-" + (i % 3), value).toString());
					}
				});
			}
			List<ConsumerRecord<String, String>> records = consumer.receiveUntil(
					(received) -> received.size() >= published.size(), Duration.ofSeconds(30));
			assertThat(ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, published)).isZero();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox", Integer.class) == 0);
			assertThat(context.getBean(OutboxReplicationRelay.class).isActive()).isTrue();
			// the slot's position follows: nothing is held for events already sent
			await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(ReplicationFixtures.jdbc()
				.queryForObject("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn) < 1024 * 1024 "
						+ "FROM pg_replication_slots WHERE slot_name = ?", Boolean.class, name + "_outbox_slot"))
				.isTrue());
		}
	}

	@Test
	void eventsWrittenBeforeTheSlotExistedAreSentFirstFromTheTable() {
		String name = slot("replbacklog");
		String topic = topic();
		Map<String, String> published = new ConcurrentHashMap<>();
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(name,
				"idempotency.outbox.auto-startup=false");
				TestConsumer consumer = new TestConsumer(topic)) {
			for (int i = 0; i < 30; i++) {
				String value = "key-" + (i % 3) + ":" + i;
				published.put(value, OutboxFixtures.publish(context, topic, "key-" + (i % 3), value).toString());
			}
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			relay.start();
			await().atMost(Duration.ofSeconds(10)).until(relay::isActive);
			// later events of the same keys come from the stream, after the backlog
			for (int i = 30; i < 60; i++) {
				String value = "key-" + (i % 3) + ":" + i;
				published.put(value, OutboxFixtures.publish(context, topic, "key-" + (i % 3), value).toString());
			}
			List<ConsumerRecord<String, String>> records = consumer.receiveUntil(
					(received) -> received.size() >= published.size(), Duration.ofSeconds(30));
			assertThat(ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, published)).isZero();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox", Integer.class) == 0);
		}
	}

	/**
	 * While the relay catches up with a backlog, the stream always has more to read: the
	 * slot's position must still move as the batches are finished, not only once the
	 * stream runs dry (the server keeps the WAL behind it, and a crash would send the whole
	 * backlog again).
	 */
	@Test
	void theSlotsPositionMovesWhileTheRelayCatchesUpWithABacklog() {
		String name = slot("replcatchup");
		String topic = topic();
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(name,
				"idempotency.outbox.auto-startup=false", "idempotency.outbox.batch-size=50",
				"idempotency.outbox.replication.status-interval=100ms")) {
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			relay.start();
			await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
			relay.stop();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			JdbcTemplate server = ReplicationFixtures.jdbc();
			String slot = name + "_outbox_slot";
			String start = server.queryForObject("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
					+ "WHERE slot_name = ?", String.class, slot);
			// 600 transactions of 50 events, written while the relay is stopped
			jdbc.execute("DO $$ BEGIN FOR t IN 1..600 LOOP INSERT INTO " + name + "_outbox (event_id, aggregate_id, "
					+ "topic, payload) SELECT gen_random_uuid(), 'key-' || (i % 10), '" + topic
					+ "', convert_to(repeat('x', 200), 'UTF8') FROM generate_series(1, 50) i; COMMIT; END LOOP; END $$");
			String end = server.queryForObject("SELECT pg_current_wal_lsn()::text", String.class);
			relay.start();
			boolean movedBeforeTheEnd = false;
			long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
			while (System.nanoTime() < deadline) {
				Integer left = jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox", Integer.class);
				Boolean moved = server.queryForObject("SELECT confirmed_flush_lsn > ?::pg_lsn AND confirmed_flush_lsn "
						+ "< ?::pg_lsn FROM pg_replication_slots WHERE slot_name = ?", Boolean.class, start, end, slot);
				if (left != null && left > 5000 && Boolean.TRUE.equals(moved)) {
					movedBeforeTheEnd = true;
					break;
				}
				if (left != null && left == 0) {
					break;
				}
				OutboxFixtures.sleep(Duration.ofMillis(20));
			}
			assertThat(movedBeforeTheEnd).as("the slot's position moved while more than 5,000 of the 30,000 events "
					+ "were still to be sent").isTrue();
			await().atMost(Duration.ofSeconds(120))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox", Integer.class) == 0);
		}
	}

	/**
	 * A broker the relay cannot reach (here: its bootstrap address refuses connections)
	 * stops the reading: no event is parked or counted as failed, and the events behind
	 * wait in the WAL until the broker is back.
	 */
	@Test
	void aBrokerOutageStopsTheStreamWithoutDeadEventsUntilItEnds() {
		String name = slot("reploutage");
		String topic = topic();
		String other = topic();
		Map<String, String> published = new ConcurrentHashMap<>();
		try (TestProxy broker = brokerCut();
				ConfigurableApplicationContext context = ReplicationFixtures.run(name,
						OutboxFixtures.withQuickFailingSends("idempotency.outbox.max-attempts=1",
								"idempotency.outbox.initial-backoff=200ms", "idempotency.outbox.max-backoff=500ms",
								"spring.kafka.producer.bootstrap-servers=127.0.0.1:" + broker.port()));
				TestConsumer consumer = new TestConsumer(topic); TestConsumer otherConsumer = new TestConsumer(other)) {
			for (int i = 0; i < 20; i++) {
				String value = "key-" + (i % 2) + ":" + i;
				published.put(value, OutboxFixtures.publish(context, topic, "key-" + (i % 2), value).toString());
			}
			// an event behind them in the stream waits too: the stream is not read on
			UUID behind = OutboxFixtures.publish(context, other, "other", "other:0");
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			// several sends fail, and as many times the cluster does not answer whether the
			// topic exists (each in max.block.ms, 500 ms here): no attempt counts
			OutboxFixtures.sleep(Duration.ofSeconds(4));
			assertThat(jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox WHERE status = 'DEAD' "
					+ "OR last_error IS NOT NULL OR attempts > 0", Integer.class)).isZero();
			assertThat(OutboxFixtures.status(jdbc, name + "_outbox", behind)).isEqualTo("PENDING");
			broker.restore();
			List<ConsumerRecord<String, String>> records = consumer.receiveUntil(
					(received) -> received.stream().map(ConsumerRecord::value).distinct().count() >= published.size(),
					Duration.ofSeconds(60));
			ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, published);
			assertThat(otherConsumer.receive(1, Duration.ofSeconds(30))).extracting(ConsumerRecord::value)
				.contains("other:0");
		}
	}

	/**
	 * A topic the cluster says it does not have is no outage: its events are parked in the
	 * table (the later events of their keys behind them), each look at the table counts
	 * an attempt until they are {@code DEAD}, and the stream goes on with the other topics
	 * (held, it would keep every other event and the WAL behind it). Once the topic exists,
	 * re-queued events are published in order per key.
	 */
	@Test
	void aTopicTheClusterDoesNotHaveIsParkedAndTheStreamGoesOnWithTheOthers() {
		String name = slot("replmissing");
		String topic = "it-repl-missing-" + UUID.randomUUID();
		String other = topic();
		Map<String, String> published = new ConcurrentHashMap<>();
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(name,
				OutboxFixtures.withQuickFailingSends("idempotency.outbox.max-attempts=3",
						"idempotency.outbox.initial-backoff=200ms", "idempotency.outbox.max-backoff=500ms",
						"idempotency.outbox.poll-interval=200ms"));
				TestConsumer consumer = new TestConsumer(topic); TestConsumer otherConsumer = new TestConsumer(other)) {
			for (int i = 0; i < 20; i++) {
				String value = "key-" + (i % 2) + ":" + i;
				published.put(value, OutboxFixtures.publish(context, topic, "key-" + (i % 2), value).toString());
			}
			// the stream goes on past them
			OutboxFixtures.publish(context, other, "other", "other:0");
			assertThat(otherConsumer.receive(1, Duration.ofSeconds(30))).extracting(ConsumerRecord::value)
				.contains("other:0");
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String table = name + "_outbox";
			// the first event of each key dies of its attempts, the others wait behind it
			await().atMost(Duration.ofSeconds(30))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + table + " WHERE status = 'DEAD'",
						Integer.class) == 2);
			assertThat(jdbc.queryForList("SELECT attempts FROM " + table + " WHERE status = 'DEAD'", Integer.class))
				.containsOnly(3);
			assertThat(jdbc.queryForObject("SELECT min(last_error) FROM " + table + " WHERE status = 'DEAD'",
					String.class)).contains(topic).contains("does not exist");
			// later events of those keys, from the stream, are held back behind them; a new
			// key's events are parked as the topic's, without waiting for a send
			for (int i = 20; i < 24; i++) {
				String value = "key-" + (i % 2) + ":" + i;
				published.put(value, OutboxFixtures.publish(context, topic, "key-" + (i % 2), value).toString());
			}
			for (int i = 24; i < 26; i++) {
				published.put("key-2:" + i, OutboxFixtures.publish(context, topic, "key-2", "key-2:" + i).toString());
			}
			OutboxFixtures.publish(context, other, "other", "other:1");
			assertThat(otherConsumer.receive(2, Duration.ofSeconds(30))).extracting(ConsumerRecord::value)
				.contains("other:1");
			await().atMost(Duration.ofSeconds(30))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + table + " WHERE status = 'DEAD'",
						Integer.class) == 3);
			assertThat(jdbc.queryForObject("SELECT count(*) FROM " + table + " WHERE status = 'PENDING' "
					+ "AND last_error IS NOT NULL", Integer.class)).isEqualTo(23);
			TestInfrastructure.createTopic(topic, 2);
			assertThat(context.getBean(OutboxDeadLetters.class).requeueAll()).isEqualTo(3);
			List<ConsumerRecord<String, String>> records = consumer.receiveUntil(
					(received) -> received.stream().map(ConsumerRecord::value).distinct().count() >= published.size(),
					Duration.ofSeconds(60));
			assertThat(ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, published)).isZero();
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + table, Integer.class) == 0);
		}
	}

	@Test
	void eventsWrittenBeforeTheSlotExistedWaitOutABrokerOutageWithoutDying() {
		String name = slot("replbacklogoutage");
		String topic = topic();
		Map<String, String> published = new ConcurrentHashMap<>();
		try (TestProxy broker = brokerCut();
				ConfigurableApplicationContext context = ReplicationFixtures.run(name,
						OutboxFixtures.withQuickFailingSends("idempotency.outbox.auto-startup=false",
								"idempotency.outbox.max-attempts=1", "idempotency.outbox.initial-backoff=200ms",
								"idempotency.outbox.max-backoff=500ms", "idempotency.outbox.poll-interval=200ms",
								"spring.kafka.producer.bootstrap-servers=127.0.0.1:" + broker.port()));
				TestConsumer consumer = new TestConsumer(topic)) {
			for (int i = 0; i < 10; i++) {
				String value = "key-" + (i % 2) + ":" + i;
				published.put(value, OutboxFixtures.publish(context, topic, "key-" + (i % 2), value).toString());
			}
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			relay.start();
			await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			// several sends fail, and as many times the cluster does not answer whether the
			// topic exists (each in max.block.ms, 500 ms here): no attempt counts
			OutboxFixtures.sleep(Duration.ofSeconds(4));
			assertThat(jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox WHERE status = 'DEAD' "
					+ "OR attempts > 0", Integer.class)).isZero();
			broker.restore();
			List<ConsumerRecord<String, String>> records = consumer.receiveUntil(
					(received) -> received.stream().map(ConsumerRecord::value).distinct().count() >= published.size(),
					Duration.ofSeconds(60));
			ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, published);
		}
	}

	@Test
	void eventsWrittenBeforeTheSlotExistedForATopicTheClusterDoesNotHaveDieOfTheirAttempts() {
		String name = slot("replbacklogmissing");
		String topic = "it-repl-backlog-missing-" + UUID.randomUUID();
		String other = topic();
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(name,
				OutboxFixtures.withQuickFailingSends("idempotency.outbox.auto-startup=false",
						"idempotency.outbox.max-attempts=2", "idempotency.outbox.initial-backoff=200ms",
						"idempotency.outbox.max-backoff=500ms", "idempotency.outbox.poll-interval=200ms"));
				TestConsumer otherConsumer = new TestConsumer(other)) {
			for (int i = 0; i < 4; i++) {
				OutboxFixtures.publish(context, topic, "key-" + (i % 2), "key-" + (i % 2) + ":" + i);
			}
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			relay.start();
			await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
			OutboxFixtures.publish(context, other, "other", "other:0");
			assertThat(otherConsumer.receive(1, Duration.ofSeconds(30))).extracting(ConsumerRecord::value)
				.contains("other:0");
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(Duration.ofSeconds(30))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox WHERE status = 'DEAD'",
						Integer.class) == 2);
			assertThat(jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox", Integer.class)).isEqualTo(4);
		}
	}

	@Test
	void anEventTheBrokerRefusesIsParkedDeadAndHoldsBackItsKeyUntilRequeued() {
		String name = slot("repldead");
		String topic = "it-repl-dead-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1,
				Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "2000"));
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(name,
				// a bounded backoff: sends that fail for the broker's reasons first (a topic
				// just created, its leader not yet known) count no attempt but lengthen it
				"idempotency.outbox.max-attempts=2", "idempotency.outbox.initial-backoff=100ms",
				"idempotency.outbox.max-backoff=500ms", "idempotency.outbox.poll-interval=200ms");
				TestConsumer consumer = new TestConsumer(topic)) {
			String large = "L".repeat(10_000);
			// the other key's event first: however the stream is cut into batches, the large
			// event is never sent beside it (see aRefusedEventHoldsBackTheLaterEventsOfItsKeyReadWhileItWasInFlight)
			OutboxFixtures.publish(context, topic, "other-key", "unrelated");
			UUID tooLarge = context.getBean(TransactionTemplate.class).execute((status) -> {
				Outbox outbox = context.getBean(Outbox.class);
				outbox.publish(topic, "key", "first");
				UUID id = outbox.publish(topic, "key", large);
				outbox.publish(topic, "key", "third");
				return id;
			});
			// a later transaction: the key is held back from the stream too
			OutboxFixtures.publish(context, topic, "key", "fourth");
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(Duration.ofSeconds(60))
				.until(() -> "DEAD".equals(OutboxFixtures.status(jdbc, name + "_outbox", tooLarge)));
			List<ConsumerRecord<String, String>> received = consumer.receive(3, Duration.ofSeconds(5));
			assertThat(received).extracting(ConsumerRecord::value).containsExactlyInAnyOrder("first", "unrelated");
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox WHERE status = 'PENDING'",
						Integer.class) == 2);

			TestInfrastructure.alterTopic(topic,
					TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "100000");
			assertThat(context.getBean(OutboxDeadLetters.class).requeue(tooLarge)).isTrue();
			List<ConsumerRecord<String, String>> all = consumer.receive(5, Duration.ofSeconds(30));
			assertThat(all).filteredOn((record) -> "key".equals(record.key()))
				.extracting(ConsumerRecord::value)
				.containsExactly("first", large, "third", "fourth");
			// once the key has nothing parked, its new events come from the stream again
			OutboxFixtures.publish(context, topic, "key", "fifth");
			assertThat(consumer.receive(6, Duration.ofSeconds(30))).extracting(ConsumerRecord::value)
				.endsWith("fifth");
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox", Integer.class) == 0);
		}
	}

	/**
	 * As {@code OutboxKeyOrderIntegrationTests}' test of the same name: an event too large
	 * for its topic in one producer batch with other keys' events (which Kafka clients
	 * before 4.2 split into the same batch again until the delivery timeout) is sent alone
	 * after the timed-out send, fails as itself and is parked; the others are published.
	 */
	@Test
	void anEventTooLargeForItsTopicSentInOneProducerBatchWithOtherKeysFailsAloneAndIsParked() {
		String name = slot("replalone");
		String topic = "it-repl-alone-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1, Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "2000"));
		// a linger puts the events of a wave in one producer batch, as a busy producer would
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(name, "idempotency.outbox.max-attempts=1",
				"idempotency.outbox.send-timeout=2s", "idempotency.outbox.initial-backoff=100ms",
				"idempotency.outbox.max-backoff=500ms", "idempotency.outbox.poll-interval=200ms",
				"spring.kafka.producer.properties.linger.ms=200",
				"spring.kafka.producer.properties.request.timeout.ms=1000");
				TestConsumer consumer = new TestConsumer(topic)) {
			UUID tooLarge = OutboxFixtures.publishTooLargeBesideOthers(context, topic);
			OutboxFixtures.assertTooLargeParkedAndOthersPublished(context.getBean(JdbcTemplate.class),
					name + "_outbox", tooLarge, consumer);
		}
	}

	@Test
	void aRefusedEventHoldsBackTheLaterEventsOfItsKeyReadWhileItWasInFlight() {
		String name = slot("replahead");
		String topic = "it-repl-ahead-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1, Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "2000"));
		// batches of 3: while one is sent, the next ones are read from the stream
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(name, "idempotency.outbox.batch-size=3",
				"idempotency.outbox.max-attempts=2", "idempotency.outbox.initial-backoff=100ms",
				"idempotency.outbox.max-backoff=500ms", "idempotency.outbox.poll-interval=200ms");
				TestConsumer consumer = new TestConsumer(topic)) {
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
			relay.stop();
			// a backlog in the slot, one event per transaction: the third of key "a" is too
			// large; the events of key "b" come after all of them, so that no batch sends the
			// large one beside another key's event (the producer would put both in one
			// request, which the broker refuses whole, and split and retry it until the send
			// timeout instead of failing the large one alone)
			String large = "L".repeat(10_000);
			List<String> keyA = new ArrayList<>();
			List<String> keyB = new ArrayList<>();
			UUID tooLarge = null;
			for (int i = 0; i < 12; i++) {
				String value = (i == 2) ? large : "a" + i;
				UUID id = OutboxFixtures.publish(context, topic, "a", value);
				keyA.add(value);
				if (i == 2) {
					tooLarge = id;
				}
			}
			for (int i = 0; i < 12; i++) {
				String other = "b" + i;
				OutboxFixtures.publish(context, topic, "b", other);
				keyB.add(other);
			}
			relay.start();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			UUID dead = tooLarge;
			await().atMost(Duration.ofSeconds(60))
				.until(() -> "DEAD".equals(OutboxFixtures.status(jdbc, name + "_outbox", dead)));
			List<ConsumerRecord<String, String>> received = consumer.receiveUntil(
					(records) -> records.stream().filter((record) -> "b".equals(record.key())).count() >= 12,
					Duration.ofSeconds(30));
			assertThat(received).filteredOn((record) -> "a".equals(record.key()))
				.extracting(ConsumerRecord::value)
				.containsExactly("a0", "a1");
			assertThat(received).filteredOn((record) -> "b".equals(record.key()))
				.extracting(ConsumerRecord::value)
				.containsExactlyElementsOf(keyB);
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox WHERE status = 'PENDING'",
						Integer.class) == 9);

			TestInfrastructure.alterTopic(topic, TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "100000");
			assertThat(context.getBean(OutboxDeadLetters.class).requeue(tooLarge)).isTrue();
			List<ConsumerRecord<String, String>> all = consumer.receiveUntil(
					(records) -> records.stream().filter((record) -> "a".equals(record.key())).count() >= 12,
					Duration.ofSeconds(30));
			assertThat(all).filteredOn((record) -> "a".equals(record.key()))
				.extracting(ConsumerRecord::value)
				.containsExactlyElementsOf(keyA);
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM " + name + "_outbox", Integer.class) == 0);
		}
	}

	@Test
	void headersTypesBinaryPayloadsAndEventsWithoutAKeyCrossTheStreamUnchanged() {
		String name = slot("replheaders");
		String topic = topic();
		byte[] binary = new byte[256];
		for (int i = 0; i < binary.length; i++) {
			binary[i] = (byte) i;
		}
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(name);
				KafkaConsumer<String, byte[]> consumer = bytesConsumer(topic)) {
			UUID id = context.getBean(TransactionTemplate.class).execute((status) -> {
				Outbox outbox = context.getBean(Outbox.class);
				outbox.publish(topic, null, "no key");
				return outbox.publish(OutboxEvent.builder(topic, "key", binary)
					.header("quoted", "a \"quoted\" \\ value\non two lines\t")
					.header("unicode", "Grüße, 東京, \u00e9\u0001")
					.header("empty", "")
					.type("Created")
					.aggregateType("Order")
					.build());
			});
			List<ConsumerRecord<String, byte[]>> records = new ArrayList<>();
			await().atMost(Duration.ofSeconds(30)).until(() -> {
				consumer.poll(Duration.ofMillis(200)).forEach(records::add);
				return records.size() >= 2;
			});
			assertThat(records).extracting(ConsumerRecord::key).containsExactlyInAnyOrder(null, "key");
			ConsumerRecord<String, byte[]> keyed = records.stream().filter((r) -> "key".equals(r.key())).findFirst()
				.orElseThrow();
			assertThat(keyed.value()).isEqualTo(binary);
			assertThat(header(keyed, "quoted")).isEqualTo("a \"quoted\" \\ value\non two lines\t");
			assertThat(header(keyed, "unicode")).isEqualTo("Grüße, 東京, \u00e9\u0001");
			assertThat(header(keyed, "empty")).isEmpty();
			assertThat(header(keyed, OutboxRelay.EVENT_TYPE_HEADER)).isEqualTo("Created");
			assertThat(header(keyed, OutboxRelay.AGGREGATE_TYPE_HEADER)).isEqualTo("Order");
			assertThat(header(keyed, OutboxRelay.IDEMPOTENCY_KEY_HEADER)).isEqualTo(id.toString());
		}
	}

	private static String header(ConsumerRecord<?, ?> record, String name) {
		Header header = record.headers().lastHeader(name);
		return (header != null) ? new String(header.value(), StandardCharsets.UTF_8) : null;
	}

	private static KafkaConsumer<String, byte[]> bytesConsumer(String topic) {
		Properties properties = new Properties();
		properties.put("bootstrap.servers", TestInfrastructure.kafkaBootstrapServers());
		properties.put("group.id", "test-" + UUID.randomUUID());
		properties.put("auto.offset.reset", "earliest");
		KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(
				properties, new StringDeserializer(),
				new ByteArrayDeserializer());
		consumer.subscribe(List.of(topic));
		return consumer;
	}

	private String slot(String name) {
		this.slots.add(name);
		return name;
	}

	// a proxy in front of the broker that refuses connections until restored
	private static TestProxy brokerCut() {
		String[] address = TestInfrastructure.kafkaBootstrapServers().split(",")[0].split(":");
		TestProxy proxy = new TestProxy(address[0], Integer.parseInt(address[1]));
		proxy.cut();
		return proxy;
	}

	private static String topic() {
		String topic = "it-repl-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 3);
		return topic;
	}

}
