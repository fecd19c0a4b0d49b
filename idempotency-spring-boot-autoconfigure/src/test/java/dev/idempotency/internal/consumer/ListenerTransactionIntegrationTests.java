package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A listener with {@code @Transactional} of its own, on the same method and on a service
 * method it calls: both join the transaction of the claim, so a failure after the writes
 * rolls back the writes and the claim, and the retry applies the record once. Work in a
 * {@code REQUIRES_NEW} transaction is not covered: it commits on its own and runs again
 * on the retry.
 */
class ListenerTransactionIntegrationTests {

	private static final String TOPIC = "it-listener-transaction";

	private static final String GROUP = "listener-transaction";

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=transaction_effects");

	@Test
	void theListenersAndItsServicesTransactionalWorkJoinsTheClaim() {
		String key = UUID.randomUUID().toString();
		send(key);
		awaitConsumed();
		Ledger ledger = app.bean(Ledger.class);
		// the claim, not committed yet, is visible to the listener and its service: one
		// transaction; a REQUIRES_NEW transaction does not see it
		assertThat(ledger.claimSeenBy(key)).containsExactlyInAnyOrder("listener", "service");
		assertThat(effects(key, "listener")).isEqualTo(1);
		assertThat(effects(key, "service")).isEqualTo(1);
		assertThat(claims(key)).isEqualTo(1);
	}

	@Test
	void aFailureAfterTheWritesRollsThemBackWithTheClaimAndTheRetryAppliesOnce() {
		String key = UUID.randomUUID().toString();
		Ledger ledger = app.bean(Ledger.class);
		ledger.failOnce(key);
		send(key);
		send(key);
		awaitConsumed();
		// first delivery: fails after the writes and rolls back; its retry applies it; the
		// second delivery is a duplicate
		assertThat(ledger.attempts(key)).isEqualTo(2);
		assertThat(effects(key, "listener")).isEqualTo(1);
		assertThat(effects(key, "service")).isEqualTo(1);
		assertThat(claims(key)).isEqualTo(1);
	}

	@Test
	void workInARequiresNewTransactionIsNotCoveredAndRunsAgainOnTheRetry() {
		String key = UUID.randomUUID().toString();
		Ledger ledger = app.bean(Ledger.class);
		ledger.failOnce(key);
		send(key);
		awaitConsumed();
		assertThat(ledger.attempts(key)).isEqualTo(2);
		// committed on its own by the failed attempt, then again by the retry
		assertThat(effects(key, "requires-new")).isEqualTo(2);
		assertThat(effects(key, "listener")).isEqualTo(1);
	}

	private static void send(String key) {
		app.send(TOPIC, key, key);
	}

	private static void awaitConsumed() {
		app.awaitCommitted(GROUP, TOPIC, Duration.ofSeconds(60));
	}

	private static int effects(String key, String writer) {
		return app.bean(TestEffects.class).count(writer, key);
	}

	private static int claims(String key) {
		return TestEffects.processedKeys(app.jdbc(), GROUP, key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Writer writer(JdbcTemplate jdbc) {
			return new Writer(jdbc);
		}

		@Bean
		Ledger ledger(JdbcTemplate jdbc, Writer writer) {
			return new Ledger(jdbc, writer);
		}

		@Bean
		DefaultErrorHandler errorHandler() {
			return new DefaultErrorHandler(new FixedBackOff(0, 1));
		}

	}

	static class Ledger extends RecordingListener {

		private final Set<String> failOnce = ConcurrentHashMap.newKeySet();

		private final Map<String, Integer> attempts = new ConcurrentHashMap<>();

		private final Map<String, Set<String>> claimSeenBy = new ConcurrentHashMap<>();

		private final JdbcTemplate jdbc;

		private final Writer writer;

		Ledger(JdbcTemplate jdbc, Writer writer) {
			this.jdbc = jdbc;
			this.writer = writer;
		}

		@KafkaListener(id = GROUP, topics = TOPIC, groupId = GROUP)
		@Idempotent
		@Transactional
		public void on(String key) {
			this.attempts.merge(key, 1, Integer::sum);
			Set<String> seenBy = this.claimSeenBy.computeIfAbsent(key, (k) -> ConcurrentHashMap.newKeySet());
			if (Writer.claimVisible(this.jdbc, key)) {
				seenBy.add("listener");
			}
			effects().add("listener", key);
			this.writer.write(key, seenBy);
			this.writer.writeInNewTransaction(key, seenBy);
			if (this.failOnce.remove(key)) {
				throw new IllegalStateException("Simulated failure after the writes");
			}
		}

		void failOnce(String key) {
			this.failOnce.add(key);
		}

		int attempts(String key) {
			return this.attempts.getOrDefault(key, 0);
		}

		Set<String> claimSeenBy(String key) {
			return this.claimSeenBy.getOrDefault(key, Set.of());
		}

	}

	static class Writer extends RecordingListener {

		private final JdbcTemplate jdbc;

		Writer(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@Transactional
		public void write(String key, Set<String> claimSeenBy) {
			if (claimVisible(this.jdbc, key)) {
				claimSeenBy.add("service");
			}
			effects().add("service", key);
		}

		@Transactional(propagation = Propagation.REQUIRES_NEW)
		public void writeInNewTransaction(String key, Set<String> claimSeenBy) {
			if (claimVisible(this.jdbc, key)) {
				claimSeenBy.add("requires-new");
			}
			effects().add("requires-new", key);
		}

		static boolean claimVisible(JdbcTemplate jdbc, String key) {
			return TestEffects.processedKeys(jdbc, GROUP, key) == 1;
		}

	}

}
