package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxEvent;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * The outbox and its relay against a real Kafka broker and a real PostgreSQL.
 */
class OutboxIntegrationTests {

	// larger than a poison topic takes
	private static final String POISON = "first " + "x".repeat(2000);

	private static final String[] PROPERTIES = OutboxFixtures.withQuickFailingSends(TestApplications.WITHOUT_JPA,
			TestApplications.WITH_RELAY, "idempotency.outbox.max-attempts=3",
			"idempotency.outbox.initial-backoff=300ms", "idempotency.outbox.max-backoff=1s",
			"idempotency.outbox.poll-interval=200ms", "idempotency.outbox.batch-size=100");

	// two instances of one application, on the default outbox table
	@RegisterExtension
	@Order(1)
	static final TestApplication first = TestApplication.of(OutboxFixtures.Writer.class).properties(PROPERTIES);

	@RegisterExtension
	@Order(2)
	static final TestApplication second = TestApplication.of(OutboxFixtures.Writer.class).properties(PROPERTIES);

	@Test
	void refusesToPublishOutsideATransaction() {
		assertThatExceptionOfType(IllegalTransactionStateException.class)
			.isThrownBy(() -> first.bean(Outbox.class).publish("it-outbox-none", "k", "v"))
			.withMessageContaining("inside a transaction");
	}

	@Test
	void refusesToPublishInATransactionOfAnotherDataSource() {
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		DriverManagerDataSource other = new DriverManagerDataSource(postgres.jdbcUrl(), postgres.username(),
				postgres.password());
		TransactionTemplate otherTransactions = new TransactionTemplate(new DataSourceTransactionManager(other));
		JdbcTemplate jdbc = first.jdbc();
		Integer before = jdbc.queryForObject("SELECT count(*) FROM outbox WHERE topic = 'it-outbox-other'",
				Integer.class);
		assertThatExceptionOfType(IllegalTransactionStateException.class)
			.isThrownBy(() -> otherTransactions.executeWithoutResult(
					(status) -> first.bean(Outbox.class).publish("it-outbox-other", "k", "v")))
			.withMessageContaining("outbox's DataSource");
		assertThat(jdbc.queryForObject("SELECT count(*) FROM outbox WHERE topic = 'it-outbox-other'", Integer.class))
			.isEqualTo(before);
	}

	@Test
	void publishesNothingForARolledBackTransactionAndOnceForACommittedOne() {
		String topic = "it-outbox-commit";
		TestInfrastructure.createTopic(topic, 1);
		Outbox outbox = first.bean(Outbox.class);
		TransactionTemplate transactions = first.bean(TransactionTemplate.class);
		transactions.executeWithoutResult((status) -> {
			outbox.publish(topic, "order-1", "rolled back");
			status.setRollbackOnly();
		});
		UUID eventId = transactions.execute((status) -> outbox.publish(OutboxEvent
			.builder(topic, "order-1", "committed")
			.header("tenant", "acme")
			.type("OrderPlaced")
			.aggregateType("Order")
			.build()));
		try (TestConsumer consumer = new TestConsumer(topic)) {
			List<ConsumerRecord<String, String>> records = consumer.receive(1, Duration.ofSeconds(20));
			assertThat(records).singleElement().satisfies((record) -> {
				assertThat(record.key()).isEqualTo("order-1");
				assertThat(record.value()).isEqualTo("committed");
				assertThat(TestConsumer.header(record, "X-Idempotency-Key")).isEqualTo(eventId.toString());
				assertThat(TestConsumer.header(record, "tenant")).isEqualTo("acme");
				assertThat(TestConsumer.header(record, "X-Event-Type")).isEqualTo("OrderPlaced");
				assertThat(TestConsumer.header(record, "X-Aggregate-Type")).isEqualTo("Order");
			});
		}
		assertThat(published(first, topic) + published(second, topic)).isEqualTo(1.0);
	}

	@Test
	void twoRelaysDeliverEveryEventOnceInOrderPerKey() {
		String topic = "it-outbox-order";
		TestInfrastructure.createTopic(topic, 4);
		int events = 10_000;
		int keys = 100;
		// both instances write, in transactions of 100 events
		for (int batch = 0; batch < events / 100; batch++) {
			TestApplication writer = (batch % 2 == 0) ? first : second;
			int start = batch * 100;
			OutboxFixtures.publishInOneTransaction(writer.context(), (outbox) -> {
				for (int i = start; i < start + 100; i++) {
					outbox.publish(topic, "key-" + (i % keys), Integer.toString(i));
				}
			});
		}
		try (TestConsumer consumer = new TestConsumer(topic)) {
			List<ConsumerRecord<String, String>> records = consumer.receive(events, Duration.ofSeconds(120));
			assertThat(records).hasSize(events);
			Set<String> eventIds = new HashSet<>();
			for (ConsumerRecord<String, String> record : records) {
				assertThat(eventIds.add(TestConsumer.header(record, "X-Idempotency-Key"))).isTrue();
			}
			OutboxFixtures.assertInOrderPerKey(records);
		}
		// between them, the two relays published each event once
		assertThat(published(first, topic) + published(second, topic)).isEqualTo(events);
	}

	@Test
	void aPoisonEventDiesAfterItsAttemptsBlocksItsKeyAndCanBeRequeued() {
		String missing = "it-outbox-too-small-" + UUID.randomUUID().toString().substring(0, 8);
		String topic = "it-outbox-after-poison";
		TestInfrastructure.createTopic(topic, 1);
		TransactionTemplate transactions = first.bean(TransactionTemplate.class);
		Outbox outbox = first.bean(Outbox.class);
		// the topic refuses the event as too large: every send of it fails
		poisonTopic(missing);
		UUID poison = transactions.execute((status) -> outbox.publish(missing, "account-7", POISON));
		OutboxDeadLetters deadLetters = first.bean(OutboxDeadLetters.class);
		await().atMost(Duration.ofSeconds(30)).until(() -> isDead(poison));
		// a later event of the same key waits behind the dead one
		transactions.executeWithoutResult((status) -> outbox.publish(topic, "account-7", "second"));
		try (TestConsumer consumer = new TestConsumer(topic)) {
			assertThat(consumer.receive(1, Duration.ofSeconds(3))).isEmpty();
			assertThat(first.bean(MeterRegistry.class).get("idempotency.outbox.dead").gauge().value()
					+ second.bean(MeterRegistry.class).get("idempotency.outbox.dead").gauge().value())
				.isGreaterThanOrEqualTo(1.0);
			assertThat(first.count("idempotency.outbox.failures", "topic", missing)
					+ second.count("idempotency.outbox.failures", "topic", missing))
				.isEqualTo(3.0);
			// the cause is fixed; the dead event and the one behind it go out, in order
			TestInfrastructure.alterTopic(missing, "max.message.bytes", "1048588");
			assertThat(deadLetters.requeue(poison)).isTrue();
			assertThat(consumer.receive(1, Duration.ofSeconds(30))).singleElement()
				.satisfies((record) -> assertThat(record.value()).isEqualTo("second"));
		}
		try (TestConsumer consumer = new TestConsumer(missing)) {
			assertThat(consumer.receive(1, Duration.ofSeconds(30))).singleElement()
				.satisfies((record) -> assertThat(record.value()).isEqualTo(POISON));
		}
	}

	@Test
	void aDeadEventIsListedWithItsErrorAndOnceDiscardedNoLongerHoldsBackItsKey() {
		String missing = "it-outbox-discarded-" + UUID.randomUUID().toString().substring(0, 8);
		String topic = "it-outbox-after-discarded";
		TestInfrastructure.createTopic(topic, 1);
		poisonTopic(missing);
		TransactionTemplate transactions = first.bean(TransactionTemplate.class);
		Outbox outbox = first.bean(Outbox.class);
		UUID poison = transactions.execute((status) -> outbox.publish(
				OutboxEvent.builder(missing, "account-9", POISON).type("AccountOpened").build()));
		await().atMost(Duration.ofSeconds(30)).until(() -> isDead(poison));
		transactions.executeWithoutResult((status) -> outbox.publish(topic, "account-9", "second"));
		OutboxDeadLetters deadLetters = second.bean(OutboxDeadLetters.class);
		assertThat(deadLetters.list(100)).filteredOn((dead) -> dead.eventId().equals(poison))
			.singleElement()
			.satisfies((dead) -> {
				assertThat(dead.topic()).isEqualTo(missing);
				assertThat(dead.key()).isEqualTo("account-9");
				assertThat(dead.type()).isEqualTo("AccountOpened");
				assertThat(dead.attempts()).isEqualTo(3);
				assertThat(dead.lastError()).isNotBlank();
				assertThat(dead.createdAt()).isNotNull();
			});
		try (TestConsumer consumer = new TestConsumer(topic)) {
			assertThat(consumer.receive(1, Duration.ofSeconds(2))).isEmpty();
			// given up on: the later event of its key goes out without it
			assertThat(deadLetters.discard(poison)).isTrue();
			assertThat(consumer.receive(1, Duration.ofSeconds(30))).singleElement()
				.satisfies((record) -> assertThat(record.value()).isEqualTo("second"));
		}
		assertThat(deadLetters.list(100)).extracting(OutboxDeadLetters.DeadEvent::eventId).doesNotContain(poison);
		assertThat(deadLetters.discard(poison)).isFalse();
		assertThat(deadLetters.requeue(poison)).isFalse();
	}

	@Test
	void discardsOnlyDeadEvents() {
		String topic = "it-outbox-not-dead";
		TestInfrastructure.createTopic(topic, 1);
		UUID sent = OutboxFixtures.publish(first.context(), topic, "k", "v");
		try (TestConsumer consumer = new TestConsumer(topic)) {
			assertThat(consumer.receive(1, Duration.ofSeconds(30))).hasSize(1);
		}
		assertThat(first.bean(OutboxDeadLetters.class).discard(sent)).isFalse();
		assertThat(first.bean(OutboxDeadLetters.class).discard(UUID.randomUUID())).isFalse();
	}

	/**
	 * Create a topic that refuses events over 1,000 bytes, as the broker refuses any record
	 * over its topic's {@code max.message.bytes}: a failure of the event, not of the
	 * broker, so it counts as an attempt.
	 */
	private static void poisonTopic(String name) {
		TestInfrastructure.createTopic(name, 1, Map.of("max.message.bytes", "1000"));
	}

	private static boolean isDead(UUID eventId) {
		return "DEAD".equals(OutboxFixtures.status(first.jdbc(), "outbox", eventId));
	}

	private static double published(TestApplication instance, String topic) {
		return instance.count("idempotency.outbox.published", "topic", topic);
	}

}
