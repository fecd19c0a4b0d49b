package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.IdempotencyFingerprintMismatchException;
import dev.idempotency.IdempotencyResultTooLargeException;
import dev.idempotency.Idempotent;
import dev.idempotency.internal.consumer.ListenerFixtures.Recovered;
import dev.idempotency.internal.consumer.ListenerFixtures.RecoveringErrorHandler;
import dev.idempotency.internal.consumer.ListenerFixtures.Replies;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.messaging.handler.annotation.SendTo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Payload fingerprints and stored results in the default transactional mode, against a
 * real broker and database, without the Redis cache (the per-poll look-up of the store is
 * on): the fingerprint and the result commit with the claim and the listener's work, and
 * the claim's duplicate path reads them back.
 */
class TransactionalFingerprintIntegrationTests {

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics("it-tx-fingerprint", "it-tx-result", "it-tx-replies", "it-tx-large")
		.properties(TestApplications.WITHOUT_JPA, "test.error-handler.retries=3",
				"idempotency.lease.max-result-size=64B");

	@Test
	void recordWithAKnownKeyAndAnotherPayloadIsRejectedAndItsEffectsAreNotApplied() {
		Recovered recovered = app.bean(Recovered.class);
		JdbcTemplate jdbc = app.jdbc();
		String key = UUID.randomUUID().toString();
		double mismatches = mismatches();
		double duplicates = duplicates();
		app.send("it-tx-fingerprint", "amount=10", key);
		app.send("it-tx-fingerprint", "amount=10", key);
		app.send("it-tx-fingerprint", "amount=99", key);
		app.awaitCommitted("tx-fingerprint", "it-tx-fingerprint");
		assertThat(jdbc.queryForList("SELECT amount FROM tx_payments WHERE key = ?", String.class, key))
			.containsExactly("amount=10");
		assertThat(recovered.exceptions()).filteredOn(IdempotencyFingerprintMismatchException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("another payload")
				.hasMessageContaining("idempotency.lease.fingerprint-mismatch"));
		assertThat(jdbc.queryForObject("SELECT fingerprint FROM processed_messages WHERE consumer_group = "
				+ "'tx-fingerprint' AND idempotency_key = ?", String.class, key))
			.hasSize(64);
		assertThat(mismatches() - mismatches).isEqualTo(1);
		assertThat(duplicates() - duplicates).isEqualTo(1);
	}

	@Test
	void rowWithoutFingerprintIsNeverAMismatch() {
		JdbcTemplate jdbc = app.jdbc();
		String key = UUID.randomUUID().toString();
		// a row of the previous version, or of a listener that did not fingerprint
		jdbc.update("INSERT INTO processed_messages (consumer_group, idempotency_key, processed_at) "
				+ "VALUES ('tx-fingerprint', ?, now())", key);
		double duplicates = duplicates();
		app.send("it-tx-fingerprint", "amount=7", key);
		app.awaitCommitted("tx-fingerprint", "it-tx-fingerprint");
		assertThat(jdbc.queryForList("SELECT amount FROM tx_payments WHERE key = ?", String.class, key)).isEmpty();
		assertThat(duplicates() - duplicates).isEqualTo(1);
	}

	@Test
	void duplicateRepliesTheStoredResult() {
		Replies replies = app.bean(Replies.class);
		String key = UUID.randomUUID().toString();
		app.send("it-tx-result", "order-1", key);
		app.awaitCommitted("tx-result", "it-tx-result");
		// the redelivery and a new record in one poll: the poll's look-up of the store
		// must not skip the duplicate without reading its stored result
		MessageListenerContainer container = app.container("tx-result");
		container.stop();
		String other = UUID.randomUUID().toString();
		app.send("it-tx-result", "order-1", key);
		app.send("it-tx-result", "order-2", other);
		container.start();
		await().atMost(TestApplication.TIMEOUT).until(() -> replies.replies.size() >= 3);
		assertThat(replies.receipts).hasSize(2);
		String first = replies.receipts.get(0);
		assertThat(first).startsWith("receipt order-1 #");
		assertThat(replies.replies).hasSize(3).containsExactly(first, first, replies.receipts.get(1));
		assertThat(app.jdbc()
			.queryForObject("SELECT result::text FROM processed_messages WHERE consumer_group = "
					+ "'tx-result' AND idempotency_key = ?", String.class, key))
			.isEqualTo("\"" + first + "\"");
	}

	@Test
	void resultLargerThanTheLimitRollsTheWorkBackAndGoesToTheRecoverer() {
		Recovered recovered = app.bean(Recovered.class);
		String key = UUID.randomUUID().toString();
		app.send("it-tx-large", "x".repeat(100), key);
		app.awaitCommitted("tx-large", "it-tx-large");
		assertThat(recovered.exceptions()).filteredOn(IdempotencyResultTooLargeException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("idempotency.lease.max-result-size (64 bytes)")
				.hasMessageContaining("rolled back"));
		// not retried: one attempt, and nothing committed
		assertThat(app.bean(Listeners.class).large()).hasSize(1);
		assertThat(TestEffects.processedKeys(app.jdbc(), "tx-large", key)).isZero();
		assertThat(app.rows("SELECT count(*) FROM tx_payments WHERE key = ?", key)).isZero();
	}

	private static double mismatches() {
		return app.count("idempotency.fingerprint.mismatches", "listener", "Listeners.fingerprinted", "policy",
				"reject");
	}

	private static double duplicates() {
		return app.count("idempotency.messages", "listener", "Listeners.fingerprinted", "outcome", "duplicate");
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ Replies.class, RecoveringErrorHandler.class })
	static class App {

		@Bean
		Listeners listeners(JdbcTemplate jdbc, Replies replies) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS tx_payments (key TEXT NOT NULL, amount TEXT NOT NULL)");
			return new Listeners(jdbc, replies);
		}

	}

	static class Listeners {

		private final List<String> large = new CopyOnWriteArrayList<>();

		private final JdbcTemplate jdbc;

		private final Replies replies;

		Listeners(JdbcTemplate jdbc, Replies replies) {
			this.jdbc = jdbc;
			this.replies = replies;
		}

		@KafkaListener(id = "tx-fingerprint", topics = "it-tx-fingerprint", groupId = "tx-fingerprint")
		@Idempotent(fingerprint = true)
		public void fingerprinted(ConsumerRecord<String, String> record) {
			pay(record, record.value());
		}

		@KafkaListener(id = "tx-result", topics = "it-tx-result", groupId = "tx-result")
		@Idempotent(storeResult = true)
		@SendTo("it-tx-replies")
		public String result(String value) {
			return this.replies.receipt("receipt " + value + " #" + UUID.randomUUID());
		}

		@KafkaListener(id = "tx-replies", topics = "it-tx-replies", groupId = "tx-replies")
		public void reply(ConsumerRecord<String, String> reply) {
			this.replies.reply(reply);
		}

		@KafkaListener(id = "tx-large", topics = "it-tx-large", groupId = "tx-large")
		@Idempotent(scope = "tx-large", storeResult = true)
		public String large(ConsumerRecord<String, String> record) {
			this.large.add(record.value());
			pay(record, "large");
			return record.value();
		}

		// the bean is a proxy: the test reaches its state through methods, not fields
		public List<String> large() {
			return this.large;
		}

		private void pay(ConsumerRecord<String, String> record, String amount) {
			this.jdbc.update("INSERT INTO tx_payments (key, amount) VALUES (?, ?)",
					new String(record.headers().lastHeader(TestApplication.KEY_HEADER).value()), amount);
		}

	}

}
