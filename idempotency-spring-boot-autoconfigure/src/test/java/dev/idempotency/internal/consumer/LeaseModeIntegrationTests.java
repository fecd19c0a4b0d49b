package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.idempotency.IdempotencyClaimFailedException;
import dev.idempotency.IdempotencyContext;
import dev.idempotency.IdempotencyFingerprintMismatchException;
import dev.idempotency.IdempotencyResultTooLargeException;
import dev.idempotency.Idempotent;
import dev.idempotency.LeaseLostHandler;
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
import org.springframework.messaging.handler.annotation.SendTo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code @Idempotent(mode = LEASE)} against a real broker and database: takeover of a
 * stalled consumer's lease with fencing, a crash between claim and completion, failures
 * that release or mark the claim, fingerprints, and stored results replayed to
 * {@code @SendTo}.
 */
class LeaseModeIntegrationTests {

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics("it-lease-a", "it-lease-b", "it-lease-crash", "it-lease-fail", "it-lease-fingerprint",
				"it-lease-result", "it-lease-replies", "it-lease-large")
		.properties(TestApplications.WITHOUT_JPA, "test.error-handler.retries=3",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=300ms", "idempotency.lease.max-result-size=64B");

	@Test
	void consumerStalledPastItsLeaseIsTakenOverAndItsLateCompletionIsRejected() throws Exception {
		Probe listeners = app.bean(Probe.class);
		JdbcTemplate jdbc = app.jdbc();
		String key = UUID.randomUUID().toString();
		app.send("it-lease-a", "stalls", key);
		assertThat(listeners.stalling.await(30, TimeUnit.SECONDS)).isTrue();
		// the second consumer meets a live lease, is sent back, and takes the key over once it expired
		app.send("it-lease-b", "takes over", key);
		await().atMost(TestApplication.TIMEOUT).until(() -> listeners.tookOver.getCount() == 0);
		listeners.resume.countDown();
		app.awaitCommitted("lease-a", "it-lease-a");
		app.awaitCommitted("lease-b", "it-lease-b");

		long stalledToken = listeners.tokens.get(0);
		long takeoverToken = listeners.tokens.get(1);
		assertThat(takeoverToken).isGreaterThan(stalledToken);
		Map<String, Object> row = jdbc.queryForMap(
				"SELECT status, fencing_token FROM processed_messages WHERE consumer_group = 'takeover' "
						+ "AND idempotency_key = ?", key);
		assertThat(row).containsEntry("status", "COMPLETED").containsEntry("fencing_token", takeoverToken);
		// the downstream's conditional write rejected the stale consumer's late one
		assertThat(jdbc.queryForObject("SELECT written_by FROM lease_downstream WHERE key = ?", String.class, key))
			.isEqualTo("takes over");
		assertThat(listeners.staleWriteRejected).isTrue();
		assertThat(app.bean(LostLeases.class).lost).singleElement().satisfies((lost) -> {
			assertThat(lost.key()).isEqualTo(key);
			assertThat(lost.fencingToken()).isEqualTo(stalledToken);
			assertThat(lost.listener()).isEqualTo("Listeners.stalls");
		});
		assertThat(app.count("idempotency.lease.lost", "listener", "Listeners.stalls")).isEqualTo(1);
		assertThat(app.count("idempotency.messages", "outcome", "processed", "listener", "Listeners.stalls"))
			.isZero();
		assertThat(app.count("idempotency.messages", "outcome", "processed", "listener", "Listeners.takesOver"))
			.isEqualTo(1);
	}

	@Test
	void claimLeftByACrashedConsumerIsProcessedOnceItsLeaseExpired() {
		Probe listeners = app.bean(Probe.class);
		JdbcTemplate jdbc = app.jdbc();
		String key = UUID.randomUUID().toString();
		// the claim of a consumer that died between its claim and its completion
		long deadToken = jdbc.queryForObject("INSERT INTO processed_messages (consumer_group, idempotency_key, "
				+ "status, fencing_token, lease_until) VALUES ('crash', ?, 'IN_PROGRESS', "
				+ "nextval('processed_messages_fencing_seq'), now() + interval '2 seconds') RETURNING fencing_token",
				Long.class, key);
		app.send("it-lease-crash", key, key);
		app.awaitCommitted("lease-crash", "it-lease-crash");
		assertThat(listeners.crashRecovered).containsExactly(key);
		Map<String, Object> row = jdbc.queryForMap("SELECT status, fencing_token FROM processed_messages "
				+ "WHERE consumer_group = 'crash' AND idempotency_key = ?", key);
		assertThat(row.get("status")).isEqualTo("COMPLETED");
		assertThat((Long) row.get("fencing_token")).isGreaterThan(deadToken);
		// while the lease was live, the record went back to the error handler at least once
		assertThat(app.count("idempotency.messages", "listener", "Listeners.crash", "outcome", "failed"))
			.isGreaterThanOrEqualTo(1);
	}

	@Test
	void nonRetryableFailureIsMarkedFailedAndGoesToTheRecovererAtOnce() {
		Probe listeners = app.bean(Probe.class);
		Recovered recovered = app.bean(Recovered.class);
		String invalid = "invalid-" + UUID.randomUUID();
		String flaky = "flaky-" + UUID.randomUUID();
		app.send("it-lease-fail", invalid, invalid);
		app.send("it-lease-fail", flaky, flaky);
		app.awaitCommitted("lease-fail", "it-lease-fail");
		// the error handler retries 3 times, but the non-retryable failure went to the recoverer at once
		assertThat(listeners.failures).containsExactly(invalid, flaky, flaky);
		assertThat(recovered.exceptions()).filteredOn(IdempotencyClaimFailedException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasCauseInstanceOf(IllegalArgumentException.class));
		assertThat(app.count("idempotency.messages", "listener", "Listeners.fails", "outcome", "failed"))
			.isEqualTo(2);
		assertThat(TestEffects.status(app.jdbc(), "fail", invalid)).isEqualTo("FAILED");
		assertThat(TestEffects.status(app.jdbc(), "fail", flaky)).isEqualTo("COMPLETED");
		// a redelivery of the failed key is not run again: straight to the recoverer
		app.send("it-lease-fail", invalid, invalid);
		app.awaitCommitted("lease-fail", "it-lease-fail");
		assertThat(listeners.failures).containsExactly(invalid, flaky, flaky);
		assertThat(recovered.exceptions()).filteredOn(IdempotencyClaimFailedException.class::isInstance)
			.hasSize(2)
			.last()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("was marked FAILED").hasNoCause());
	}

	@Test
	void recordWithAKnownKeyAndAnotherPayloadIsRejected() {
		Probe listeners = app.bean(Probe.class);
		Recovered recovered = app.bean(Recovered.class);
		String key = UUID.randomUUID().toString();
		app.send("it-lease-fingerprint", "amount=10", key);
		app.send("it-lease-fingerprint", "amount=10", key);
		app.send("it-lease-fingerprint", "amount=99", key);
		app.awaitCommitted("lease-fingerprint", "it-lease-fingerprint");
		assertThat(listeners.fingerprinted).containsExactly("amount=10");
		assertThat(recovered.exceptions()).filteredOn(IdempotencyFingerprintMismatchException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("another payload"));
		assertThat(app.count("idempotency.fingerprint.mismatches", "listener", "Listeners.fingerprinted", "policy",
				"reject"))
			.isEqualTo(1);
		assertThat(app.count("idempotency.messages", "listener", "Listeners.fingerprinted", "outcome", "duplicate"))
			.isEqualTo(1);
	}

	@Test
	void duplicateRepliesTheStoredResult() {
		Replies replies = app.bean(Replies.class);
		String key = UUID.randomUUID().toString();
		app.send("it-lease-result", "order-1", key);
		app.send("it-lease-result", "order-1", key);
		await().atMost(TestApplication.TIMEOUT).until(() -> replies.replies.size() >= 2);
		assertThat(replies.receipts).hasSize(1);
		assertThat(replies.replies).hasSize(2).containsOnly(replies.receipts.get(0));
		assertThat(replies.receipts.get(0)).startsWith("receipt order-1 token ");
	}

	@Test
	void resultLargerThanTheLimitCompletesTheClaimAndFailsTheRecordClearly() {
		Recovered recovered = app.bean(Recovered.class);
		String key = UUID.randomUUID().toString();
		app.send("it-lease-large", "x".repeat(100), key);
		app.awaitCommitted("lease-large", "it-lease-large");
		assertThat(recovered.exceptions()).filteredOn(IdempotencyResultTooLargeException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("idempotency.lease.max-result-size (64 bytes)"));
		assertThat(app.jdbc()
			.queryForMap("SELECT status, result FROM processed_messages WHERE consumer_group = 'large' "
					+ "AND idempotency_key = ?", key))
			.containsEntry("status", "COMPLETED")
			.containsEntry("result", null);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ Probe.class, Replies.class, LostLeases.class, RecoveringErrorHandler.class })
	static class App {

		@Bean
		Listeners listeners(JdbcTemplate jdbc, Probe probe, Replies replies) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS lease_downstream (key TEXT PRIMARY KEY, fencing_token BIGINT "
					+ "NOT NULL, written_by TEXT NOT NULL)");
			return new Listeners(jdbc, probe, replies);
		}

	}

	static class LostLeases implements LeaseLostHandler {

		final List<LostLease> lost = new CopyOnWriteArrayList<>();

		@Override
		public void leaseLost(LostLease lease) {
			this.lost.add(lease);
		}

	}

	// what the listeners saw; apart from them, since they are proxied
	static class Probe {

		final CountDownLatch stalling = new CountDownLatch(1);

		final CountDownLatch resume = new CountDownLatch(1);

		final CountDownLatch tookOver = new CountDownLatch(1);

		final List<Long> tokens = new CopyOnWriteArrayList<>();

		volatile boolean staleWriteRejected;

		final List<String> crashRecovered = new CopyOnWriteArrayList<>();

		final List<String> failures = new CopyOnWriteArrayList<>();

		final List<String> fingerprinted = new CopyOnWriteArrayList<>();

	}

	static class Listeners {

		private final JdbcTemplate jdbc;

		private final Probe probe;

		private final Replies replies;

		Listeners(JdbcTemplate jdbc, Probe probe, Replies replies) {
			this.jdbc = jdbc;
			this.probe = probe;
			this.replies = replies;
		}

		@KafkaListener(id = "lease-a", topics = "it-lease-a", groupId = "lease-a")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s", scope = "takeover")
		public void stalls(String value) throws InterruptedException {
			this.probe.tokens.add(IdempotencyContext.fencingToken());
			this.probe.stalling.countDown();
			// a pause longer than the lease: a GC pause, a slow downstream
			this.probe.resume.await(30, TimeUnit.SECONDS);
			this.probe.staleWriteRejected = writeDownstream(value) == 0;
		}

		@KafkaListener(id = "lease-b", topics = "it-lease-b", groupId = "lease-b")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s", scope = "takeover")
		public void takesOver(String value) {
			this.probe.tokens.add(IdempotencyContext.fencingToken());
			writeDownstream(value);
			this.probe.tookOver.countDown();
		}

		// the fencing pattern: the downstream keeps the highest token per key and refuses lower ones
		private int writeDownstream(String value) {
			return this.jdbc.update("""
					INSERT INTO lease_downstream (key, fencing_token, written_by) VALUES (?, ?, ?)
					ON CONFLICT (key) DO UPDATE SET fencing_token = EXCLUDED.fencing_token,
					    written_by = EXCLUDED.written_by
					WHERE lease_downstream.fencing_token < EXCLUDED.fencing_token
					""", IdempotencyContext.key(), IdempotencyContext.fencingToken(), value);
		}

		@KafkaListener(id = "lease-crash", topics = "it-lease-crash", groupId = "lease-crash")
		@Idempotent(mode = Idempotent.Mode.LEASE, scope = "crash")
		public void crash(String value) {
			this.probe.crashRecovered.add(value);
		}

		@KafkaListener(id = "lease-fail", topics = "it-lease-fail", groupId = "lease-fail")
		@Idempotent(mode = Idempotent.Mode.LEASE, scope = "fail", nonRetryable = IllegalArgumentException.class)
		public void fails(String value) {
			this.probe.failures.add(value);
			if (value.startsWith("invalid")) {
				throw new IllegalArgumentException("Invalid card number");
			}
			if (this.probe.failures.stream().filter(value::equals).count() == 1) {
				throw new IllegalStateException("Payment gateway timed out");
			}
		}

		@KafkaListener(id = "lease-fingerprint", topics = "it-lease-fingerprint", groupId = "lease-fingerprint")
		@Idempotent(mode = Idempotent.Mode.LEASE, fingerprint = true)
		public void fingerprinted(String value) {
			this.probe.fingerprinted.add(value);
		}

		@KafkaListener(id = "lease-result", topics = "it-lease-result", groupId = "lease-result")
		@Idempotent(mode = Idempotent.Mode.LEASE, storeResult = true)
		@SendTo("it-lease-replies")
		public String result(String value) {
			return this.replies.receipt("receipt " + value + " token " + IdempotencyContext.fencingToken());
		}

		@KafkaListener(id = "lease-replies", topics = "it-lease-replies", groupId = "lease-replies")
		public void reply(ConsumerRecord<String, String> reply) {
			this.replies.reply(reply);
		}

		@KafkaListener(id = "lease-large", topics = "it-lease-large", groupId = "lease-large")
		@Idempotent(mode = Idempotent.Mode.LEASE, scope = "large", storeResult = true)
		public String large(String value) {
			return value;
		}

	}

}
