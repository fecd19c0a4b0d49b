package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.OutboxDeadLetters;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import dev.idempotency.internal.outbox.OutboxRepository.Failure;
import dev.idempotency.internal.store.TableName;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestThreads;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Per-key order of the outbox when transactions and relay instances race, on a real
 * PostgreSQL. No relay runs: the tests claim as relay instances do, so that each race is
 * set up step by step rather than left to timing.
 */
class OutboxOrderIntegrationTests {

	private static final Duration LEASE = Duration.ofMinutes(1);

	@RegisterExtension
	static final TestApplication app = TestApplication.of(OutboxFixtures.Writer.class)
		.properties(OutboxFixtures.onTable("order"));

	private static OutboxRepository repository;

	private static TransactionTemplate transactions;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void beans() {
		repository = app.bean(OutboxRepository.class);
		transactions = app.bean(TransactionTemplate.class);
		jdbc = app.jdbc();
	}

	@BeforeEach
	void emptyTheOutbox() {
		jdbc.update("DELETE FROM order_outbox");
		jdbc.update("DELETE FROM order_outbox_claims");
	}

	@Test
	void aClaimThatStartedBeforeARequeueTakesTheRequeuedEventBeforeTheLaterOnesOfItsKey() throws Exception {
		String key = "requeued-" + UUID.randomUUID();
		UUID first = publish(key, "first");
		List<OutboxRecord> claimed = repository.claim("relay-a", LEASE);
		assertThat(claimed).extracting(OutboxRecord::eventId).containsExactly(first);
		assertThat(repository.fail(Map.of(claimed.get(0).id(), new Failure("boom", Duration.ofMillis(1), true)),
				List.of(claimed.get(0).claim()), "relay-a", 1)).hasSize(1);
		UUID second = publish(key, "second");
		CompletableFuture<List<OutboxRecord>> early;
		// relay b starts its claim (and its transaction) while relay c holds the claim turn
		try (OpenTransaction turn = OpenTransaction.begin(transactions, jdbc, repository::takeClaimTurn)) {
			early = TestThreads.supplyAsync(() -> repository.claim("relay-b", LEASE));
			await().atMost(Duration.ofSeconds(10)).until(turn::blocksAnother);
			// the dead event is re-queued after relay b's transaction started
			assertThat(app.bean(OutboxDeadLetters.class).requeue(first)).isTrue();
		}
		// the re-queued event is due at once, whatever relay b's clock reads: relay b takes
		// it, and the later event of its key only behind it
		assertThat(early.get(10, TimeUnit.SECONDS)).extracting(OutboxRecord::eventId).containsExactly(first, second);
		assertThat(repository.claim("relay-d", LEASE)).isEmpty();
	}

	/**
	 * A claim reads no row locks, so its only views of another relay's failed event are
	 * before the failure record (the key held by the other relay's claim) and after it
	 * (the claim given back in the same transaction, the first event backing off, then
	 * due): in neither does it take the second event of the key without the first.
	 */
	@Test
	void aClaimBeforeOrAfterAnotherRelaysFailureNeverTakesTheLaterEventOfTheKeyAlone() {
		String key = "failing-" + UUID.randomUUID();
		UUID first = publish(key, "first");
		List<OutboxRecord> claimed = repository.claim("relay-a", LEASE);
		assertThat(claimed).extracting(OutboxRecord::eventId).containsExactly(first);
		UUID second = publish(key, "second");
		assertThat(repository.claim("relay-b", LEASE)).isEmpty();
		assertThat(repository.fail(Map.of(claimed.get(0).id(), new Failure("boom", Duration.ofSeconds(2), true)),
				List.of(claimed.get(0).claim()), "relay-a", 5)).isEmpty();
		assertThat(jdbc.queryForObject("SELECT attempts FROM order_outbox WHERE event_id = ?", Integer.class, first))
			.isOne();
		assertThat(jdbc.queryForObject("SELECT count(*) FROM order_outbox_claims", Integer.class)).isZero();
		assertThat(repository.claim("relay-b", LEASE)).as("while the first event backs off").isEmpty();
		await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(repository.claim("relay-c", LEASE))
			.extracting(OutboxRecord::eventId)
			.containsExactly(first, second));
	}

	/**
	 * A failure is recorded only under the claim that took the event: a relay whose claim
	 * was taken over, and which holds the key again by a later claim, cannot turn an event
	 * the other relay sent (here marked sent) back into a pending or dead one.
	 */
	@Test
	void aLateFailureUnderATakenOverClaimChangesNothingWhileItsRelayHoldsTheKeyAgain() {
		String key = "late-failure-" + UUID.randomUUID();
		UUID first = publish(key, "first");
		List<OutboxRecord> stale = repository.claim("relay-a", Duration.ofMillis(200));
		assertThat(stale).extracting(OutboxRecord::eventId).containsExactly(first);
		List<OutboxRecord> taken = await().atMost(Duration.ofSeconds(10))
			.until(() -> repository.claim("relay-b", LEASE), (claimed) -> !claimed.isEmpty());
		assertThat(repository.complete(List.of(taken.get(0).id()), List.of(taken.get(0).claim()), "relay-b", false))
			.isOne();
		UUID second = publish(key, "second");
		assertThat(repository.claim("relay-a", LEASE)).extracting(OutboxRecord::eventId).containsExactly(second);
		assertThat(repository.fail(Map.of(stale.get(0).id(), new Failure("late", Duration.ofMinutes(1), true)),
				List.of(stale.get(0).claim()), "relay-a", 1)).isEmpty();
		assertThat(jdbc.queryForObject("SELECT status || ':' || attempts FROM order_outbox WHERE event_id = ?",
				String.class, first)).isEqualTo("SENT:0");
	}

	/**
	 * After an upgrade, an event leased on its row by the previous version of the relay
	 * blocks its key until that lease ends.
	 */
	@Test
	void anEventLeasedByThePreviousVersionOfTheRelayBlocksItsKeyUntilTheLeaseEnds() {
		String key = "old-lease-" + UUID.randomUUID();
		UUID first = publish(key, "first");
		UUID second = publish(key, "second");
		jdbc.update("UPDATE order_outbox SET lease_owner = 'previous-relay', lease_until = now() + interval '1 second' "
				+ "WHERE event_id = ?", first);
		assertThat(repository.claim("relay-a", LEASE)).isEmpty();
		await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(repository.claim("relay-a", LEASE))
			.extracting(OutboxRecord::eventId)
			.containsExactly(first, second));
	}

	/**
	 * A relay whose claim expired and was taken over cannot record a failure for the
	 * events it took: they are the new claimant's now.
	 */
	@Test
	void aRelayWhoseExpiredClaimWasTakenOverRecordsNoFailure() {
		String key = "taken-over-" + UUID.randomUUID();
		UUID event = publish(key, "only");
		List<OutboxRecord> stale = repository.claim("relay-a", Duration.ofMillis(200));
		assertThat(stale).extracting(OutboxRecord::eventId).containsExactly(event);
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(repository.claim("relay-b", LEASE)).extracting(OutboxRecord::eventId)
				.containsExactly(event));
		assertThat(repository.fail(Map.of(stale.get(0).id(), new Failure("late", Duration.ofMinutes(1), true)),
				List.of(stale.get(0).claim()), "relay-a", 1)).isEmpty();
		assertThat(jdbc.queryForObject("SELECT status || ':' || attempts FROM order_outbox WHERE event_id = ?",
				String.class, event)).isEqualTo("PENDING:0");
		assertThat(jdbc.queryForList("SELECT lease_owner FROM order_outbox_claims", String.class))
			.containsExactly("relay-b");
	}

	/**
	 * A claim that takes over some keys of an expired claim leaves it the others: the
	 * relay of the expired claim still records its failures for the events of the keys
	 * nobody took, and still cannot for the events of the keys taken.
	 */
	@Test
	void aRelayWhoseExpiredClaimWasPartlyTakenOverRecordsFailuresOnlyForTheKeysNobodyTook() {
		UUID taken = publish("taken-" + UUID.randomUUID(), "first");
		UUID kept = publish("kept-" + UUID.randomUUID(), "first");
		List<OutboxRecord> stale = repository.claim("relay-a", Duration.ofMillis(200));
		assertThat(stale).extracting(OutboxRecord::eventId).containsExactly(taken, kept);
		// relay b claims batches of one event: it takes over the first key only
		OutboxRepository batchesOfOne = new OutboxRepository(jdbc, transactions, new TableName(null, "order_outbox"),
				1);
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(batchesOfOne.claim("relay-b", LEASE)).extracting(OutboxRecord::eventId)
				.containsExactly(taken));
		Failure late = new Failure("late", Duration.ofMinutes(1), true);
		assertThat(repository.fail(Map.of(stale.get(0).id(), late, stale.get(1).id(), late),
				List.of(stale.get(0).claim()), "relay-a", 5)).isEmpty();
		assertThat(attemptOf(taken)).isEqualTo("PENDING:0:-:due");
		assertThat(attemptOf(kept)).isEqualTo("PENDING:1:late:backing off");
		assertThat(jdbc.queryForList("SELECT lease_owner FROM order_outbox_claims", String.class))
			.containsExactly("relay-b");
	}

	/**
	 * A claim takes over the keys of an expired claim without waiting for the claim's
	 * owner, which is giving it back at the same moment: in the turn that every claim waits
	 * for, a claim never waits for a row lock, so it deadlocks with no completion, failure
	 * record or release of the owner.
	 */
	@Test
	void aTakeoverDoesNotWaitForTheOwnerGivingBackTheExpiredClaim() throws Exception {
		UUID event = publish("given-back-" + UUID.randomUUID(), "only");
		List<OutboxRecord> stale = repository.claim("relay-a", Duration.ofMillis(200));
		assertThat(stale).extracting(OutboxRecord::eventId).containsExactly(event);
		await().atMost(Duration.ofSeconds(10))
			.until(() -> jdbc.queryForObject("SELECT bool_and(lease_until < now()) FROM order_outbox_claims",
					Boolean.class));
		try (OpenTransaction release = OpenTransaction.begin(transactions, jdbc,
				() -> repository.release(List.of(stale.get(0).claim()), "relay-a"))) {
			CompletableFuture<List<OutboxRecord>> takeover = TestThreads
				.supplyAsync(() -> repository.claim("relay-b", LEASE));
			assertThat(takeover.get(10, TimeUnit.SECONDS)).extracting(OutboxRecord::eventId).containsExactly(event);
		}
		assertThat(jdbc.queryForList("SELECT lease_owner FROM order_outbox_claims", String.class))
			.containsExactly("relay-b");
	}

	@Test
	void aTransactionPublishingForAKeyWaitsForAnOpenTransactionThatPublishedForItSoIdsFollowCommitOrder()
			throws Exception {
		String key = "concurrent-" + UUID.randomUUID();
		AtomicReference<UUID> first = new AtomicReference<>();
		CompletableFuture<UUID> second;
		try (OpenTransaction earlier = OpenTransaction.begin(transactions, jdbc,
				() -> first.set(publish(key, "first")))) {
			second = TestThreads.supplyAsync(() -> publish(key, "second"));
			await().atMost(Duration.ofSeconds(10)).until(() -> second.isDone() || earlier.blocksAnother());
			assertThat(second).as("a publisher of the same key, while the first is open").isNotDone();
			// another key does not wait
			assertThat(publish("other-" + UUID.randomUUID(), "unrelated")).isNotNull();
		}
		UUID secondId = second.get(10, TimeUnit.SECONDS);
		assertThat(jdbc.queryForList("SELECT event_id FROM order_outbox WHERE aggregate_id = ? ORDER BY id",
				UUID.class, key)).containsExactly(first.get(), secondId);
		assertThat(repository.claim("relay-a", LEASE)).filteredOn((event) -> key.equals(event.key()))
			.extracting(OutboxRecord::eventId)
			.containsExactly(first.get(), secondId);
	}

	@Test
	void aPublisherWaitingForItsKeyGivesUpAfterTheTransactionsLockTimeout() {
		String key = "timeout-" + UUID.randomUUID();
		try (OpenTransaction earlier = OpenTransaction.begin(transactions, jdbc, () -> publish(key, "first"))) {
			// as an application sets it for its transaction (SET LOCAL lock_timeout)
			assertThatExceptionOfType(CannotAcquireLockException.class)
				.isThrownBy(() -> transactions.executeWithoutResult((status) -> {
					jdbc.queryForObject("SELECT set_config('lock_timeout', '200ms', true)", String.class);
					publish(key, "second");
				}))
				.withMessageContaining("another open transaction that published an event of the same key");
		}
		assertThat(jdbc.queryForList("SELECT payload FROM order_outbox WHERE aggregate_id = ?", byte[].class, key))
			.hasSize(1);
	}

	@Test
	void transactionsPublishingTwoKeysInOppositeOrdersDeadlockAndOnlyOneOfThemFails() {
		String a = "a-" + UUID.randomUUID();
		String b = "b-" + UUID.randomUUID();
		CountDownLatch eachHoldsOneKey = new CountDownLatch(2);
		CompletableFuture<Void> ab = publishBoth(a, b, eachHoldsOneKey);
		CompletableFuture<Void> ba = publishBoth(b, a, eachHoldsOneKey);
		await().atMost(Duration.ofSeconds(20)).until(() -> ab.isDone() && ba.isDone());
		assertThat(List.of(ab, ba)).filteredOn(CompletableFuture::isCompletedExceptionally)
			.singleElement()
			.satisfies((failed) -> assertThat(failed).failsWithin(Duration.ZERO)
				.withThrowableThat()
				.havingCause()
				.isInstanceOf(PessimisticLockingFailureException.class));
		// the other committed both its events
		assertThat(jdbc.queryForObject("SELECT count(*) FROM order_outbox WHERE aggregate_id IN (?, ?)",
				Integer.class, a, b)).isEqualTo(2);
	}

	private static CompletableFuture<Void> publishBoth(String first, String second, CountDownLatch eachHoldsOneKey) {
		return TestThreads.runAsync(() -> transactions.executeWithoutResult((status) -> {
			publish(first, "1");
			eachHoldsOneKey.countDown();
			try {
				eachHoldsOneKey.await(10, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			publish(second, "2");
		}));
	}

	/**
	 * The status, attempts, last error and backoff of an event, as one string.
	 */
	private static String attemptOf(UUID event) {
		return jdbc.queryForObject("SELECT status || ':' || attempts || ':' || coalesce(last_error, '-') || ':' "
				+ "|| CASE WHEN next_attempt_at > now() THEN 'backing off' ELSE 'due' END "
				+ "FROM order_outbox WHERE event_id = ?", String.class, event);
	}

	private static UUID publish(String key, String payload) {
		return OutboxFixtures.publish(app.context(), "it-outbox-race", key, payload);
	}

}
