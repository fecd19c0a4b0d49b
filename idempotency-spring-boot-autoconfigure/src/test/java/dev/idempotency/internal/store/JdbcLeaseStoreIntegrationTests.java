package dev.idempotency.internal.store;

import dev.idempotency.store.LeaseClaim;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessage;
import java.io.IOException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.test.TestThreads;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@link JdbcLeaseStore} on a real PostgreSQL, with the shipped migrations: claims commit
 * alone, leases run on the database clock, and completion, release and failure are fenced
 * on the token.
 */
class JdbcLeaseStoreIntegrationTests {

	private static final TableName TABLE = new TableName(null, "lease_processed_messages");

	private static final Duration MINUTE = Duration.ofMinutes(1);

	private static HikariDataSource dataSource;

	private static JdbcTemplate jdbc;

	private static LeaseStore leases;

	@BeforeAll
	static void createTable() throws IOException {
		dataSource = StoreTables.dataSource(4);
		jdbc = new JdbcTemplate(dataSource);
		StoreTables.create(dataSource, TABLE);
		leases = new JdbcProcessedMessageStore(jdbc, TABLE, Duration.ofSeconds(5)).leases();
	}

	@AfterAll
	static void close() {
		dataSource.close();
	}

	@Test
	void claimCommitsAloneEvenInsideATransactionThatRollsBack() {
		ProcessedMessage message = message();
		LeaseClaim claim = new TransactionTemplate(new DataSourceTransactionManager(dataSource)).execute((status) -> {
			LeaseClaim inner = leases.claim(message, MINUTE, null);
			status.setRollbackOnly();
			return inner;
		});
		assertThat(claim.state()).isEqualTo(LeaseClaim.State.ACQUIRED);
		assertThat(column(message, "status")).isEqualTo("IN_PROGRESS");
	}

	@Test
	void liveLeaseIsReportedInProgressAndAnExpiredOneIsTakenOverWithALargerToken() {
		ProcessedMessage message = message();
		LeaseClaim first = leases.claim(message, MINUTE, null);
		LeaseClaim second = leases.claim(message, MINUTE, null);
		assertThat(second.state()).isEqualTo(LeaseClaim.State.IN_PROGRESS);
		assertThat(second.fencingToken()).isEqualTo(first.fencingToken());
		// the lease ends on the database's clock
		jdbc.update("UPDATE lease_processed_messages SET lease_until = now() - interval '1 millisecond' "
				+ "WHERE idempotency_key = ?", message.key());
		LeaseClaim takeover = leases.claim(message, MINUTE, null);
		assertThat(takeover.state()).isEqualTo(LeaseClaim.State.ACQUIRED);
		assertThat(takeover.takenOver()).isTrue();
		assertThat(takeover.fencingToken()).isGreaterThan(first.fencingToken());
		// the stale owner can neither complete, release nor fail the new owner's claim
		assertThat(leases.complete(message, first.fencingToken(), null)).isFalse();
		assertThat(leases.release(message, first.fencingToken())).isFalse();
		assertThat(leases.fail(message, first.fencingToken(), "late")).isFalse();
		assertThat(column(message, "status")).isEqualTo("IN_PROGRESS");
		assertThat(leases.complete(message, takeover.fencingToken(), "{\"ok\":true}")).isTrue();
		LeaseClaim duplicate = leases.claim(message, MINUTE, null);
		assertThat(duplicate.state()).isEqualTo(LeaseClaim.State.COMPLETED);
		assertThat(duplicate.result()).isEqualTo("{\"ok\": true}");
	}

	@Test
	void releasedKeyIsClaimedAgainWithALargerToken() {
		ProcessedMessage message = message();
		LeaseClaim first = leases.claim(message, MINUTE, null);
		assertThat(leases.release(message, first.fencingToken())).isTrue();
		LeaseClaim again = leases.claim(message, MINUTE, null);
		assertThat(again.state()).isEqualTo(LeaseClaim.State.ACQUIRED);
		assertThat(again.takenOver()).isFalse();
		assertThat(again.fencingToken()).isGreaterThan(first.fencingToken());
	}

	@Test
	void failedClaimIsNotClaimedAgain() {
		ProcessedMessage message = message();
		LeaseClaim claim = leases.claim(message, MINUTE, null);
		assertThat(leases.fail(message, claim.fencingToken(), "java.lang.IllegalArgumentException: card")).isTrue();
		LeaseClaim again = leases.claim(message, MINUTE, null);
		assertThat(again.state()).isEqualTo(LeaseClaim.State.FAILED);
		assertThat(again.failure()).isEqualTo("java.lang.IllegalArgumentException: card");
	}

	@Test
	void aFailureMayBeRecordedAgainByItsOwnTokenOnly() {
		// a retry of a failure whose commit went through but whose answer was lost
		ProcessedMessage message = message();
		LeaseClaim claim = leases.claim(message, MINUTE, null);
		assertThat(leases.fail(message, claim.fencingToken(), "first")).isTrue();
		assertThat(leases.fail(message, claim.fencingToken(), "again")).isTrue();
		assertThat(leases.fail(message, claim.fencingToken() + 1, "another token")).isFalse();
		assertThat(column(message, "status")).isEqualTo("FAILED");
	}

	@Test
	void aFailureTextIsStoredWithoutItsNulCharactersAndCutToItsLimit() {
		ProcessedMessage message = message();
		LeaseClaim claim = leases.claim(message, MINUTE, null);
		String failure = "declined: code\u0000051 " + "x".repeat(1980) + "\uD83D\uDE00 and more";
		assertThat(leases.fail(message, claim.fencingToken(), failure)).isTrue();
		String stored = column(message, "failure");
		assertThat(stored).startsWith("declined: code\uFFFD051 ").doesNotContain("\u0000");
		// cut before the surrogate pair that straddles the limit, never inside it
		assertThat(stored).hasSize(1999).doesNotContain("\uD83D");
	}

	@Test
	void expiredLeaseOfAnotherPayloadIsNotTakenOver() {
		ProcessedMessage message = message();
		leases.claim(message, Duration.ofMillis(1), "a".repeat(64));
		jdbc.update("UPDATE lease_processed_messages SET lease_until = now() - interval '1 second' "
				+ "WHERE idempotency_key = ?", message.key());
		LeaseClaim other = leases.claim(message, MINUTE, "b".repeat(64));
		assertThat(other.state()).isEqualTo(LeaseClaim.State.IN_PROGRESS);
		assertThat(other.fingerprint()).isEqualTo("a".repeat(64));
		assertThat(leases.claim(message, MINUTE, "a".repeat(64)).state()).isEqualTo(LeaseClaim.State.ACQUIRED);
	}

	@Test
	void rowOfTheTransactionalModeIsCompleted() {
		ProcessedMessage message = message();
		jdbc.update("INSERT INTO lease_processed_messages (consumer_group, idempotency_key) VALUES (?, ?)",
				message.scope(), message.key());
		assertThat(leases.claim(message, MINUTE, null).state()).isEqualTo(LeaseClaim.State.COMPLETED);
	}

	@Test
	void claimGivesUpAfterTheLockTimeoutWhileATransactionalClaimOfTheKeyIsOpen() throws Exception {
		ProcessedMessage message = message();
		JdbcProcessedMessageStore transactional = new JdbcProcessedMessageStore(jdbc, TABLE, Duration.ofSeconds(5));
		LeaseStore impatient = new JdbcProcessedMessageStore(jdbc, TABLE, Duration.ofMillis(200)).leases();
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		CountDownLatch claimed = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		CompletableFuture<Boolean> holder = TestThreads.supplyAsync(() -> transactions.execute((status) -> {
			boolean isNew = transactional.claim(message).isNew();
			claimed.countDown();
			await(release);
			status.setRollbackOnly();
			return isNew;
		}));
		try {
			assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
			CompletableFuture<LeaseClaim> lease = TestThreads.supplyAsync(() -> impatient.claim(message, MINUTE, null));
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> lease.get(5, TimeUnit.SECONDS))
				.withCauseInstanceOf(PessimisticLockingFailureException.class);
		}
		finally {
			release.countDown();
		}
		assertThat(holder.get(10, TimeUnit.SECONDS)).isTrue();
	}

	private static void await(CountDownLatch latch) {
		try {
			latch.await(10, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private static ProcessedMessage message() {
		return new ProcessedMessage("leases", UUID.randomUUID().toString(), "payments", 0, 1);
	}

	private static String column(ProcessedMessage message, String column) {
		return jdbc.queryForObject("SELECT " + column + " FROM lease_processed_messages WHERE consumer_group = ? "
				+ "AND idempotency_key = ?", String.class, message.scope(), message.key());
	}

	@Test
	void thePollLookupCountsOnlyCompletedKeys() {
		String scope = "lookup-" + UUID.randomUUID();
		String sql = "INSERT INTO " + TABLE.qualified()
				+ " (consumer_group, idempotency_key, status) VALUES (?, ?, ?)";
		jdbc.update(sql, scope, "transactional", null);
		jdbc.update(sql, scope, "completed", "COMPLETED");
		jdbc.update(sql, scope, "in-progress", "IN_PROGRESS");
		jdbc.update(sql, scope, "failed", "FAILED");
		boolean[] processed = new JdbcProcessedKeyLookup(jdbc, TABLE).areProcessed(scope,
				java.util.List.of("transactional", "completed", "in-progress", "failed", "unknown"));
		assertThat(processed).containsExactly(true, true, false, false, false);
	}

}
