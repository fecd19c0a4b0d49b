package dev.idempotency.internal.consumer;

import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code @Idempotent} record listeners against a real Kafka broker and a real PostgreSQL,
 * with a plain JDBC transaction manager.
 */
class IdempotentListenerIntegrationTests {

	private static final String PAYMENTS = "it-payments";

	private static final String FLAKY = "it-flaky";

	private static final String ORDERS = "it-orders";

	private static final String KEY_HEADER = TestApplication.KEY_HEADER;

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(PAYMENTS, FLAKY, ORDERS)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=effects");

	@Test
	void appliesTheSameKeyOnceAndCommitsEveryOffset() {
		String key = UUID.randomUUID().toString();
		TopicPartition partition = new TopicPartition(PAYMENTS, 0);
		double duplicatesBefore = count("ledger", "duplicate");
		for (int i = 0; i < 3; i++) {
			TestKafka.send(PAYMENTS, 0, "debit:" + key + ":" + i, Map.of(KEY_HEADER, key));
		}
		long end = TestKafka.endOffset(partition);
		awaitCommitted("ledger", partition, end);
		assertThat(effects("ledger", key)).isEqualTo(1);
		assertThat(processedKeys("ledger", key)).isEqualTo(1);
		assertThat(count("ledger", "duplicate") - duplicatesBefore).isEqualTo(2.0);
	}

	@Test
	void eachConsumerGroupAppliesTheEffectOnce() {
		String key = UUID.randomUUID().toString();
		TopicPartition partition = new TopicPartition(PAYMENTS, 0);
		TestKafka.send(PAYMENTS, 0, "debit:" + key, Map.of(KEY_HEADER, key));
		TestKafka.send(PAYMENTS, 0, "debit:" + key, Map.of(KEY_HEADER, key));
		long end = TestKafka.endOffset(partition);
		await().atMost(TestApplication.TIMEOUT).untilAsserted(() -> {
			assertThat(TestKafka.committedOffset("ledger", partition)).isEqualTo(end);
			assertThat(TestKafka.committedOffset("audit", partition)).isEqualTo(end);
		});
		assertThat(effects("ledger", key)).isEqualTo(1);
		assertThat(effects("audit", key)).isEqualTo(1);
		assertThat(app.jdbc().queryForList("SELECT consumer_group FROM processed_messages WHERE idempotency_key = ?",
				String.class, key))
			.containsExactlyInAnyOrder("ledger", "audit");
	}

	@Test
	void redeliveryAfterCommittedEffectIsNotAppliedAgain() {
		String prefix = UUID.randomUUID().toString();
		TopicPartition partition = new TopicPartition(PAYMENTS, 0);
		for (int i = 0; i < 5; i++) {
			TestKafka.send(PAYMENTS, 0, "debit:" + prefix + i, Map.of(KEY_HEADER, prefix + i));
		}
		long end = TestKafka.endOffset(partition);
		awaitCommitted("ledger", partition, end);
		// The effects committed; now lose the offsets, as a crash before the offset commit
		// would, and let the group read the partition again from the start.
		MessageListenerContainer container = app.container("ledger");
		container.stop();
		TestKafka.resetOffset("ledger", partition, 0);
		double duplicatesBefore = count("ledger", "duplicate");
		container.start();
		awaitCommitted("ledger", partition, end);
		assertThat(count("ledger", "duplicate") - duplicatesBefore).isEqualTo((double) end);
		for (int i = 0; i < 5; i++) {
			assertThat(effects("ledger", prefix + i)).isEqualTo(1);
		}
	}

	@Test
	void failedAttemptLeavesNoKeyAndTheRetryAppliesOnce() {
		String key = UUID.randomUUID().toString();
		Flaky flaky = app.bean(Flaky.class);
		flaky.failOnce(key);
		TestKafka.send(FLAKY, 0, key, Map.of(KEY_HEADER, key));
		await().atMost(TestApplication.TIMEOUT).untilAsserted(() -> assertThat(effects("flaky", key)).isEqualTo(1));
		assertThat(flaky.attempts(key)).isEqualTo(2);
		// The first attempt inserted its effect, then threw; had its claim survived, the
		// retry would have been skipped as a duplicate and there would be no effect.
		assertThat(processedKeys("flaky", key)).isEqualTo(1);
		assertThat(count("flaky", "failed")).isGreaterThanOrEqualTo(1.0);
	}

	@Test
	void recordThatAlwaysFailsLeavesNeitherKeyNorEffect() {
		String key = UUID.randomUUID().toString();
		Flaky flaky = app.bean(Flaky.class);
		flaky.failAlways(key);
		TopicPartition partition = new TopicPartition(FLAKY, 0);
		TestKafka.send(FLAKY, 0, key, Map.of(KEY_HEADER, key));
		long end = TestKafka.endOffset(partition);
		// The error handler retries twice, then gives up and commits the offset.
		awaitCommitted("flaky", partition, end);
		assertThat(flaky.attempts(key)).isEqualTo(3);
		assertThat(effects("flaky", key)).isZero();
		assertThat(processedKeys("flaky", key)).isZero();
	}

	@Test
	void keyFromExpressionOverPayload() {
		String order = UUID.randomUUID().toString();
		TopicPartition partition = new TopicPartition(ORDERS, 0);
		TestKafka.send(ORDERS, 0, order + ":created", Map.of());
		TestKafka.send(ORDERS, 0, order + ":created-again", Map.of(KEY_HEADER, "ignored-" + order));
		long end = TestKafka.endOffset(partition);
		awaitCommitted("orders", partition, end);
		assertThat(effects("orders", order + ":created")).isEqualTo(1);
		assertThat(effects("orders", order + ":created-again")).isZero();
		assertThat(processedKeys("orders", order)).isEqualTo(1);
	}

	@Test
	void keyLongerThanTheColumnIsStoredAsDigest() {
		String key = "k".repeat(300) + UUID.randomUUID();
		TopicPartition partition = new TopicPartition(PAYMENTS, 0);
		TestKafka.send(PAYMENTS, 0, "debit:" + key, Map.of(KEY_HEADER, key));
		TestKafka.send(PAYMENTS, 0, "debit:" + key, Map.of(KEY_HEADER, key));
		long end = TestKafka.endOffset(partition);
		awaitCommitted("ledger", partition, end);
		assertThat(effects("ledger", key)).isEqualTo(1);
		String stored = app.jdbc().queryForObject(
				"SELECT idempotency_key FROM processed_messages WHERE consumer_group = 'ledger' AND record_offset = ?",
				String.class, end - 2);
		assertThat(stored).startsWith("sha256:").hasSize(7 + 64);
	}

	@Test
	void recordWithoutKeyIsIdentifiedByItsCoordinates() {
		String payload = "debit:" + UUID.randomUUID();
		TopicPartition partition = new TopicPartition(PAYMENTS, 0);
		TestKafka.send(PAYMENTS, 0, payload, Map.of());
		long offset = TestKafka.endOffset(partition) - 1;
		await().atMost(TestApplication.TIMEOUT)
			.untilAsserted(() -> assertThat(effects("ledger", payload.substring(6))).isEqualTo(1));
		assertThat(processedKeys("ledger", PAYMENTS + "-0-" + offset)).isEqualTo(1);
	}

	private static int effects(String listener, String key) {
		return app.bean(TestEffects.class).count(listener, key);
	}

	private static int processedKeys(String group, String key) {
		return TestEffects.processedKeys(app.jdbc(), group, key);
	}

	private static double count(String listenerGroup, String outcome) {
		String listener = switch (listenerGroup) {
			case "ledger" -> "Ledger.debit";
			case "audit" -> "Ledger.audit";
			case "flaky" -> "Flaky.apply";
			default -> throw new IllegalArgumentException(listenerGroup);
		};
		return app.count("idempotency.messages", "listener", listener, "outcome", outcome);
	}

	private static void awaitCommitted(String group, TopicPartition partition, long end) {
		await().atMost(TestApplication.TIMEOUT)
			.untilAsserted(() -> assertThat(TestKafka.committedOffset(group, partition)).isEqualTo(end));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ Ledger.class, Flaky.class, Orders.class })
	static class App {

		@Bean
		DefaultErrorHandler errorHandler() {
			return new DefaultErrorHandler(new FixedBackOff(0, 2));
		}

	}

	static class Ledger extends RecordingListener {

		// payload only: the record comes from the container's record interceptor
		@KafkaListener(id = "ledger", topics = PAYMENTS, groupId = "ledger")
		@Idempotent
		public void debit(String payload) {
			effects().add("ledger", payload.split(":")[1]);
		}

		@KafkaListener(id = "audit", topics = PAYMENTS, groupId = "audit")
		@Idempotent
		public void audit(ConsumerRecord<String, String> record) {
			effects().add("audit", record.value().split(":")[1]);
		}

	}

	static class Flaky extends RecordingListener {

		final Set<String> failOnce = ConcurrentHashMap.newKeySet();

		final Set<String> failAlways = ConcurrentHashMap.newKeySet();

		final Map<String, Integer> attempts = new ConcurrentHashMap<>();

		// the bean is a proxy: the test reaches its state through methods, not fields
		public void failOnce(String key) {
			this.failOnce.add(key);
		}

		public void failAlways(String key) {
			this.failAlways.add(key);
		}

		public int attempts(String key) {
			return this.attempts.getOrDefault(key, 0);
		}

		@KafkaListener(id = "flaky", topics = FLAKY, groupId = "flaky")
		@Idempotent
		public void apply(Message<String> message) {
			String key = message.getPayload();
			this.attempts.merge(key, 1, Integer::sum);
			effects().add("flaky", key);
			if (this.failOnce.remove(key) || this.failAlways.contains(key)) {
				throw new IllegalStateException("Simulated failure after the effect was written");
			}
		}

	}

	static class Orders extends RecordingListener {

		@KafkaListener(id = "orders", topics = ORDERS, groupId = "orders")
		@Idempotent(key = "payload.split(':')[0]")
		public void order(@Payload String payload, @Header(KafkaHeaders.RECEIVED_PARTITION) int partition,
				@Header(KafkaHeaders.OFFSET) long offset) {
			effects().add("orders", payload);
		}

	}


}
