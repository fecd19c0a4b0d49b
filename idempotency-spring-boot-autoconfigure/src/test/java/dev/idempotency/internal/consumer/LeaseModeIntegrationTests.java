package dev.idempotency.internal.consumer;

import java.time.Duration;
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
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code @Idempotent(mode = LEASE)} against a real broker and database: takeover of a
 * stalled consumer's lease with fencing, a crash between claim and completion, failures
 * that release or mark the claim, fingerprints, and stored results replayed to
 * {@code @SendTo}.
 */
class LeaseModeIntegrationTests {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private static ConfigurableApplicationContext context;

	@BeforeAll
	static void start() {
		for (String topic : List.of("it-lease-a", "it-lease-b", "it-lease-crash", "it-lease-fail",
				"it-lease-fingerprint", "it-lease-result", "it-lease-replies", "it-lease-large")) {
			TestInfrastructure.createTopic(topic, 1);
		}
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=300ms", "idempotency.lease.max-result-size=64B");
	}

	@AfterAll
	static void stop() {
		context.close();
	}

	@Test
	void consumerStalledPastItsLeaseIsTakenOverAndItsLateCompletionIsRejected() throws Exception {
		Probe listeners = context.getBean(Probe.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send("it-lease-a", 0, "stalls", Map.of("X-Idempotency-Key", key));
		assertThat(listeners.stalling.await(30, TimeUnit.SECONDS)).isTrue();
		// the second consumer meets a live lease, is sent back, and takes the key over once it expired
		TestKafka.send("it-lease-b", 0, "takes over", Map.of("X-Idempotency-Key", key));
		await().atMost(TIMEOUT).until(() -> listeners.tookOver.getCount() == 0);
		listeners.resume.countDown();
		TestKafka.awaitCommitted("lease-a", new TopicPartition("it-lease-a", 0), TIMEOUT);
		TestKafka.awaitCommitted("lease-b", new TopicPartition("it-lease-b", 0), TIMEOUT);

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
		assertThat(context.getBean(LostLeases.class).lost).singleElement().satisfies((lost) -> {
			assertThat(lost.key()).isEqualTo(key);
			assertThat(lost.fencingToken()).isEqualTo(stalledToken);
			assertThat(lost.listener()).isEqualTo("Listeners.stalls");
		});
		assertThat(TestMeters.count(context, "idempotency.lease.lost", "listener", "Listeners.stalls")).isEqualTo(1);
		assertThat(TestMeters.count(context, "idempotency.messages", "outcome", "processed", "listener",
				"Listeners.stalls"))
			.isZero();
		assertThat(TestMeters.count(context, "idempotency.messages", "outcome", "processed", "listener",
				"Listeners.takesOver"))
			.isEqualTo(1);
	}

	@Test
	void claimLeftByACrashedConsumerIsProcessedOnceItsLeaseExpired() {
		Probe listeners = context.getBean(Probe.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		// the claim of a consumer that died between its claim and its completion
		long deadToken = jdbc.queryForObject("INSERT INTO processed_messages (consumer_group, idempotency_key, "
				+ "status, fencing_token, lease_until) VALUES ('crash', ?, 'IN_PROGRESS', "
				+ "nextval('processed_messages_fencing_seq'), now() + interval '2 seconds') RETURNING fencing_token",
				Long.class, key);
		TestKafka.send("it-lease-crash", 0, key, Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("lease-crash", new TopicPartition("it-lease-crash", 0), TIMEOUT);
		assertThat(listeners.crashRecovered).containsExactly(key);
		Map<String, Object> row = jdbc.queryForMap("SELECT status, fencing_token FROM processed_messages "
				+ "WHERE consumer_group = 'crash' AND idempotency_key = ?", key);
		assertThat(row.get("status")).isEqualTo("COMPLETED");
		assertThat((Long) row.get("fencing_token")).isGreaterThan(deadToken);
		// while the lease was live, the record went back to the error handler at least once
		assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Listeners.crash", "outcome",
				"failed"))
			.isGreaterThanOrEqualTo(1);
	}

	@Test
	void nonRetryableFailureIsMarkedFailedAndGoesToTheRecovererAtOnce() {
		Probe listeners = context.getBean(Probe.class);
		Recovered recovered = context.getBean(Recovered.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String invalid = "invalid-" + UUID.randomUUID();
		String flaky = "flaky-" + UUID.randomUUID();
		TestKafka.send("it-lease-fail", 0, invalid, Map.of("X-Idempotency-Key", invalid));
		TestKafka.send("it-lease-fail", 0, flaky, Map.of("X-Idempotency-Key", flaky));
		TestKafka.awaitCommitted("lease-fail", new TopicPartition("it-lease-fail", 0), TIMEOUT);
		// the error handler retries 3 times, but the non-retryable failure went to the recoverer at once
		assertThat(listeners.failures).containsExactly(invalid, flaky, flaky);
		assertThat(recovered.exceptions).filteredOn(IdempotencyClaimFailedException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasCauseInstanceOf(IllegalArgumentException.class));
		assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Listeners.fails", "outcome",
				"failed"))
			.isEqualTo(2);
		assertThat(status(jdbc, "fail", invalid)).isEqualTo("FAILED");
		assertThat(status(jdbc, "fail", flaky)).isEqualTo("COMPLETED");
		// a redelivery of the failed key is not run again: straight to the recoverer
		TestKafka.send("it-lease-fail", 0, invalid, Map.of("X-Idempotency-Key", invalid));
		TestKafka.awaitCommitted("lease-fail", new TopicPartition("it-lease-fail", 0), TIMEOUT);
		assertThat(listeners.failures).containsExactly(invalid, flaky, flaky);
		assertThat(recovered.exceptions).filteredOn(IdempotencyClaimFailedException.class::isInstance)
			.hasSize(2)
			.last()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("was marked FAILED").hasNoCause());
	}

	@Test
	void recordWithAKnownKeyAndAnotherPayloadIsRejected() {
		Probe listeners = context.getBean(Probe.class);
		Recovered recovered = context.getBean(Recovered.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send("it-lease-fingerprint", 0, "amount=10", Map.of("X-Idempotency-Key", key));
		TestKafka.send("it-lease-fingerprint", 0, "amount=10", Map.of("X-Idempotency-Key", key));
		TestKafka.send("it-lease-fingerprint", 0, "amount=99", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("lease-fingerprint", new TopicPartition("it-lease-fingerprint", 0), TIMEOUT);
		assertThat(listeners.fingerprinted).containsExactly("amount=10");
		assertThat(recovered.exceptions).filteredOn(IdempotencyFingerprintMismatchException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("another payload"));
		assertThat(TestMeters.count(context, "idempotency.fingerprint.mismatches", "listener",
				"Listeners.fingerprinted", "policy", "reject"))
			.isEqualTo(1);
		assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Listeners.fingerprinted",
				"outcome", "duplicate"))
			.isEqualTo(1);
	}

	@Test
	void duplicateRepliesTheStoredResult() {
		Probe listeners = context.getBean(Probe.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send("it-lease-result", 0, "order-1", Map.of("X-Idempotency-Key", key));
		TestKafka.send("it-lease-result", 0, "order-1", Map.of("X-Idempotency-Key", key));
		await().atMost(TIMEOUT).until(() -> listeners.replies.size() >= 2);
		assertThat(listeners.receipts).hasSize(1);
		assertThat(listeners.replies).hasSize(2).containsOnly(listeners.receipts.get(0));
		assertThat(listeners.receipts.get(0)).startsWith("receipt order-1 token ");
	}

	@Test
	void resultLargerThanTheLimitCompletesTheClaimAndFailsTheRecordClearly() {
		Recovered recovered = context.getBean(Recovered.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send("it-lease-large", 0, "x".repeat(100), Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("lease-large", new TopicPartition("it-lease-large", 0), TIMEOUT);
		assertThat(recovered.exceptions).filteredOn(IdempotencyResultTooLargeException.class::isInstance)
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasMessageContaining("idempotency.lease.max-result-size (64 bytes)"));
		assertThat(jdbc.queryForMap("SELECT status, result FROM processed_messages WHERE consumer_group = 'large' "
				+ "AND idempotency_key = ?", key))
			.containsEntry("status", "COMPLETED")
			.containsEntry("result", null);
	}

	private static String status(JdbcTemplate jdbc, String scope, String key) {
		return jdbc.queryForObject("SELECT status FROM processed_messages WHERE consumer_group = ? "
				+ "AND idempotency_key = ?", String.class, scope, key);
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
			jdbc.execute("CREATE TABLE IF NOT EXISTS lease_downstream (key TEXT PRIMARY KEY, fencing_token BIGINT "
					+ "NOT NULL, written_by TEXT NOT NULL)");
			return new Listeners(jdbc, probe);
		}

		@Bean
		LostLeases lostLeases() {
			return new LostLeases();
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

	static class LostLeases implements LeaseLostHandler {

		final List<LostLease> lost = new CopyOnWriteArrayList<>();

		@Override
		public void leaseLost(LostLease lease) {
			this.lost.add(lease);
		}

	}

	static class Recovered {

		final List<Throwable> exceptions = new CopyOnWriteArrayList<>();

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

		final List<String> receipts = new CopyOnWriteArrayList<>();

		final List<String> replies = new CopyOnWriteArrayList<>();

	}

	static class Listeners {

		private final JdbcTemplate jdbc;

		private final Probe probe;

		Listeners(JdbcTemplate jdbc, Probe probe) {
			this.jdbc = jdbc;
			this.probe = probe;
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
			String receipt = "receipt " + value + " token " + IdempotencyContext.fencingToken();
			this.probe.receipts.add(receipt);
			return receipt;
		}

		@KafkaListener(id = "lease-replies", topics = "it-lease-replies", groupId = "lease-replies")
		public void reply(ConsumerRecord<String, String> reply) {
			this.probe.replies.add(reply.value());
		}

		@KafkaListener(id = "lease-large", topics = "it-lease-large", groupId = "lease-large")
		@Idempotent(mode = Idempotent.Mode.LEASE, scope = "large", storeResult = true)
		public String large(String value) {
			return value;
		}

	}

}
