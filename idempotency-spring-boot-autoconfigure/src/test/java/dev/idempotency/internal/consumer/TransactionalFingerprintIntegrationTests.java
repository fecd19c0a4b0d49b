package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.IdempotencyFingerprintMismatchException;
import dev.idempotency.IdempotencyResultTooLargeException;
import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestMeters;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Payload fingerprints and stored results in the default transactional mode, against a
 * real broker and database, without the Redis cache (the per-poll look-up of the store is
 * on): the fingerprint and the result commit with the claim and the listener's work, and
 * the claim's duplicate path reads them back.
 */
class TransactionalFingerprintIntegrationTests {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private static ConfigurableApplicationContext context;

	@BeforeAll
	static void start() {
		for (String topic : List.of("it-tx-fingerprint", "it-tx-result", "it-tx-replies", "it-tx-large")) {
			TestInfrastructure.createTopic(topic, 1);
		}
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.lease.max-result-size=64B");
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void recordWithAKnownKeyAndAnotherPayloadIsRejectedAndItsEffectsAreNotApplied() {
		Recovered recovered = context.getBean(Recovered.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		double mismatches = TestMeters.count(context, "idempotency.fingerprint.mismatches", "listener",
				"Listeners.fingerprinted", "policy", "reject");
		double duplicates = TestMeters.count(context, "idempotency.messages", "listener", "Listeners.fingerprinted",
				"outcome", "duplicate");
		TestKafka.send("it-tx-fingerprint", 0, "amount=10", Map.of("X-Idempotency-Key", key));
		TestKafka.send("it-tx-fingerprint", 0, "amount=10", Map.of("X-Idempotency-Key", key));
		TestKafka.send("it-tx-fingerprint", 0, "amount=99", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("tx-fingerprint", new TopicPartition("it-tx-fingerprint", 0), TIMEOUT);
		assertThat(jdbc.queryForList("SELECT amount FROM tx_payments WHERE key = ?", String.class, key))
			.containsExactly("amount=10");
		assertThat(recovered.exceptions).filteredOn(IdempotencyFingerprintMismatchException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("another payload")
				.hasMessageContaining("idempotency.lease.fingerprint-mismatch"));
		assertThat(jdbc.queryForObject("SELECT fingerprint FROM processed_messages WHERE consumer_group = "
				+ "'tx-fingerprint' AND idempotency_key = ?", String.class, key))
			.hasSize(64);
		assertThat(TestMeters.count(context, "idempotency.fingerprint.mismatches", "listener",
				"Listeners.fingerprinted", "policy", "reject") - mismatches)
			.isEqualTo(1);
		assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Listeners.fingerprinted",
				"outcome", "duplicate") - duplicates)
			.isEqualTo(1);
	}

	@Test
	void rowWithoutFingerprintIsNeverAMismatch() {
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		// a row of the previous version, or of a listener that did not fingerprint
		jdbc.update("INSERT INTO processed_messages (consumer_group, idempotency_key, processed_at) "
				+ "VALUES ('tx-fingerprint', ?, now())", key);
		double duplicates = TestMeters.count(context, "idempotency.messages", "listener", "Listeners.fingerprinted",
				"outcome", "duplicate");
		TestKafka.send("it-tx-fingerprint", 0, "amount=7", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("tx-fingerprint", new TopicPartition("it-tx-fingerprint", 0), TIMEOUT);
		assertThat(jdbc.queryForList("SELECT amount FROM tx_payments WHERE key = ?", String.class, key)).isEmpty();
		assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Listeners.fingerprinted",
				"outcome", "duplicate") - duplicates)
			.isEqualTo(1);
	}

	@Test
	void duplicateRepliesTheStoredResult() {
		Probe probe = context.getBean(Probe.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send("it-tx-result", 0, "order-1", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("tx-result", new TopicPartition("it-tx-result", 0), TIMEOUT);
		// the redelivery and a new record in one poll: the poll's look-up of the store
		// must not skip the duplicate without reading its stored result
		MessageListenerContainer container = context.getBean(KafkaListenerEndpointRegistry.class)
			.getListenerContainer("tx-result");
		container.stop();
		String other = UUID.randomUUID().toString();
		TestKafka.send("it-tx-result", 0, "order-1", Map.of("X-Idempotency-Key", key));
		TestKafka.send("it-tx-result", 0, "order-2", Map.of("X-Idempotency-Key", other));
		container.start();
		await().atMost(TIMEOUT).until(() -> probe.replies.size() >= 3);
		assertThat(probe.receipts).hasSize(2);
		String first = probe.receipts.get(0);
		assertThat(first).startsWith("receipt order-1 #");
		assertThat(probe.replies).hasSize(3).containsExactly(first, first, probe.receipts.get(1));
		assertThat(jdbc.queryForObject("SELECT result::text FROM processed_messages WHERE consumer_group = "
				+ "'tx-result' AND idempotency_key = ?", String.class, key))
			.isEqualTo("\"" + first + "\"");
	}

	@Test
	void resultLargerThanTheLimitRollsTheWorkBackAndGoesToTheRecoverer() {
		Recovered recovered = context.getBean(Recovered.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send("it-tx-large", 0, "x".repeat(100), Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("tx-large", new TopicPartition("it-tx-large", 0), TIMEOUT);
		assertThat(recovered.exceptions).filteredOn(IdempotencyResultTooLargeException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("idempotency.lease.max-result-size (64 bytes)")
				.hasMessageContaining("rolled back"));
		// not retried: one attempt, and nothing committed
		assertThat(context.getBean(Probe.class).large).hasSize(1);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_messages WHERE consumer_group = 'tx-large' "
				+ "AND idempotency_key = ?", Integer.class, key))
			.isZero();
		assertThat(jdbc.queryForObject("SELECT count(*) FROM tx_payments WHERE key = ?", Integer.class, key))
			.isZero();
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Probe probe() {
			return new Probe();
		}

		@Bean
		Listeners listeners(JdbcTemplate jdbc, Probe probe) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS tx_payments (key TEXT NOT NULL, amount TEXT NOT NULL)");
			return new Listeners(jdbc, probe);
		}

		@Bean
		Recovered recovered() {
			return new Recovered();
		}

		@Bean
		DefaultErrorHandler errorHandler(Recovered recovered) {
			return new DefaultErrorHandler((record, ex) -> recovered.exceptions.add(ex.getCause()),
					new FixedBackOff(0, 3));
		}

	}

	static class Recovered {

		final List<Throwable> exceptions = new CopyOnWriteArrayList<>();

	}

	// what the listeners saw; apart from them, since they are proxied
	static class Probe {

		final List<String> receipts = new CopyOnWriteArrayList<>();

		final List<String> replies = new CopyOnWriteArrayList<>();

		final List<String> large = new CopyOnWriteArrayList<>();

	}

	static class Listeners {

		private final JdbcTemplate jdbc;

		private final Probe probe;

		Listeners(JdbcTemplate jdbc, Probe probe) {
			this.jdbc = jdbc;
			this.probe = probe;
		}

		@KafkaListener(id = "tx-fingerprint", topics = "it-tx-fingerprint", groupId = "tx-fingerprint")
		@Idempotent(fingerprint = true)
		public void fingerprinted(ConsumerRecord<String, String> record) {
			this.jdbc.update("INSERT INTO tx_payments (key, amount) VALUES (?, ?)",
					new String(record.headers().lastHeader("X-Idempotency-Key").value()), record.value());
		}

		@KafkaListener(id = "tx-result", topics = "it-tx-result", groupId = "tx-result")
		@Idempotent(storeResult = true)
		@SendTo("it-tx-replies")
		public String result(String value) {
			String receipt = "receipt " + value + " #" + UUID.randomUUID();
			this.probe.receipts.add(receipt);
			return receipt;
		}

		@KafkaListener(id = "tx-replies", topics = "it-tx-replies", groupId = "tx-replies")
		public void reply(ConsumerRecord<String, String> reply) {
			this.probe.replies.add(reply.value());
		}

		@KafkaListener(id = "tx-large", topics = "it-tx-large", groupId = "tx-large")
		@Idempotent(scope = "tx-large", storeResult = true)
		public String large(ConsumerRecord<String, String> record) {
			this.probe.large.add(record.value());
			this.jdbc.update("INSERT INTO tx_payments (key, amount) VALUES (?, ?)",
					new String(record.headers().lastHeader("X-Idempotency-Key").value()), "large");
			return record.value();
		}

	}

}
