package dev.idempotency.internal.store;

import dev.idempotency.IdempotencyKeyInProgressException;
import dev.idempotency.store.Claim;
import dev.idempotency.store.LeaseClaim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.internal.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.test.TestThreads;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * {@link JdbcProcessedMessageStore} on a real PostgreSQL, with the shipped migrations of its table.
 */
class JdbcProcessedMessageStoreIntegrationTests extends ProcessedMessageStoreContractTests {

	private static final TableName TABLE = new TableName(null, "contract_processed_messages");

	private static HikariDataSource dataSource;

	private static JdbcProcessedMessageStore store;

	private static TransactionTemplate transactions;

	@BeforeAll
	static void createTable() throws IOException {
		dataSource = StoreTables.dataSource(12);
		StoreTables.create(dataSource, TABLE);
		store = store(dataSource, Duration.ofSeconds(5));
		transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
	}

	@AfterAll
	static void close() {
		dataSource.close();
	}

	@Override
	protected ProcessedMessageStore store() {
		return store;
	}

	@Override
	protected boolean claimAndComplete(ProcessedMessage message) {
		return transactions.execute((status) -> store.claim(message).isNew());
	}

	@Override
	protected List<Boolean> claimAllAndComplete(List<ProcessedMessage> messages) {
		return transactions.execute((status) -> store.claimAll(messages).stream().map(Claim::isNew).toList());
	}

	@Override
	protected boolean claimAndFail(ProcessedMessage message) {
		return transactions.execute((status) -> {
			boolean claimed = store.claim(message).isNew();
			status.setRollbackOnly();
			return claimed;
		});
	}

	@Test
	void concurrentClaimWaitsForTheFirstTransactionAndThenSeesADuplicate() throws Exception {
		ProcessedMessage message = message("group", UUID.randomUUID().toString());
		CountDownLatch claimed = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		CompletableFuture<Boolean> first = holdClaim(message, claimed, release, false);
		assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
		CompletableFuture<Boolean> second = TestThreads.supplyAsync(() -> claimAndComplete(message));
		// The second claim blocks on the unique index while the first is open.
		Thread.sleep(300);
		assertThat(second).isNotDone();
		release.countDown();
		assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
		assertThat(second.get(10, TimeUnit.SECONDS)).isFalse();
	}

	@Test
	void concurrentClaimTakesTheKeyWhenTheFirstTransactionRollsBack() throws Exception {
		ProcessedMessage message = message("group", UUID.randomUUID().toString());
		CountDownLatch claimed = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		CompletableFuture<Boolean> first = holdClaim(message, claimed, release, true);
		assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
		CompletableFuture<Boolean> second = TestThreads.supplyAsync(() -> claimAndComplete(message));
		Thread.sleep(300);
		release.countDown();
		assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
		assertThat(second.get(10, TimeUnit.SECONDS)).isTrue();
	}

	@Test
	void concurrentClaimGivesUpAfterTheLockTimeout() throws Exception {
		JdbcProcessedMessageStore impatient = store(dataSource, Duration.ofMillis(200));
		ProcessedMessage message = message("group", UUID.randomUUID().toString());
		CountDownLatch claimed = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		CompletableFuture<Boolean> first = holdClaim(message, claimed, release, false);
		try {
			assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
			assertThatExceptionOfType(PessimisticLockingFailureException.class)
				.isThrownBy(() -> transactions.execute((TransactionStatus status) -> impatient.claim(message).isNew()));
		}
		finally {
			release.countDown();
		}
		assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
	}

	@ParameterizedTest
	@ValueSource(ints = { 5, 20 })
	void aBatchGivesUpAfterTheLockTimeoutWhateverTheHeldKeysPlaceInIt(int size) throws Exception {
		JdbcProcessedMessageStore impatient = store(dataSource, Duration.ofMillis(200));
		List<ProcessedMessage> batch = batch(size);
		// the held key is neither the first nor the last the claim inserts (keys go in sorted)
		ProcessedMessage held = batch.stream().sorted(Comparator.comparing(ProcessedMessage::key)).toList().get(2);
		CountDownLatch claimed = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		CompletableFuture<Boolean> first = holdClaim(held, claimed, release, false);
		try {
			assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
			CompletableFuture<List<Boolean>> second = TestThreads.supplyAsync(() -> claimAll(impatient, batch));
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> second.get(5, TimeUnit.SECONDS))
				.withCauseInstanceOf(PessimisticLockingFailureException.class);
		}
		finally {
			release.countDown();
		}
		assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
	}

	/**
	 * Lease-mode claims share the table: a key in progress or failed there has a row, but
	 * was not processed.
	 */
	@Test
	void aKeyHeldByALeaseIsProcessedOnlyOnceItsClaimCompletes() {
		List<ProcessedMessage> messages = batch(3);
		ProcessedMessage inProgress = messages.get(0);
		ProcessedMessage failed = messages.get(1);
		ProcessedMessage completed = messages.get(2);
		assertThat(store.leases().claim(inProgress, Duration.ofMinutes(1), null).state())
			.isEqualTo(LeaseClaim.State.ACQUIRED);
		assertThat(store.leases().fail(failed, store.leases().claim(failed, Duration.ofMinutes(1), null).fencingToken(),
				"poison")).isTrue();
		assertThat(store.leases()
			.complete(completed, store.leases().claim(completed, Duration.ofMinutes(1), null).fencingToken(), null))
			.isTrue();
		assertThat(store.isProcessed(inProgress.scope(), inProgress.key())).as("in progress").isFalse();
		assertThat(store.isProcessed(failed.scope(), failed.key())).as("failed").isFalse();
		assertThat(store.isProcessed(completed.scope(), completed.key())).as("completed").isTrue();
	}

	/**
	 * A lease-mode claim of the same scope that is released between this claim's
	 * conflicting insert and its look at the lease leaves no row: the key was neither
	 * processed nor is it held any more, so the record must be retried, not skipped as a
	 * duplicate (it would be acknowledged and never applied).
	 */
	@ParameterizedTest
	@ValueSource(ints = { 1, 5, 20 })
	void aLeaseReleasedWhileTheClaimLooksAtItIsNotADuplicate(int size) {
		List<ProcessedMessage> batch = batch(size);
		ProcessedMessage held = batch.get(size / 2);
		assertThat(store.leases().claim(held, Duration.ofMinutes(1), null).state())
			.isEqualTo(LeaseClaim.State.ACQUIRED);
		// the lease-mode attempt fails and releases its claim just before the lease check
		DataSource releasing = beforeStatement(dataSource, "'IN_PROGRESS'",
				() -> new JdbcTemplate(dataSource).update("DELETE FROM " + TABLE.qualified()
						+ " WHERE consumer_group = ? AND idempotency_key = ?", held.scope(), held.key()));
		JdbcProcessedMessageStore racing = store(releasing, Duration.ofSeconds(5));
		TransactionTemplate racingTransactions = new TransactionTemplate(new DataSourceTransactionManager(releasing));
		assertThatExceptionOfType(IdempotencyKeyInProgressException.class)
			.isThrownBy(() -> racingTransactions.execute((status) -> (size == 1) ? List.of(racing.claim(held))
					: racing.claimAll(batch)))
			.withMessageContaining(held.key());
		// nothing was claimed: the retry claims every key of the batch
		assertThat(claimAllAndComplete(batch)).containsOnly(true);
	}

	@Test
	void lockTimeoutBoundsTheClaimAndNotTheRestOfTheTransaction() {
		JdbcProcessedMessageStore impatient = store(dataSource, Duration.ofMillis(200));
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		List<String> settings = transactions.execute((status) -> {
			String before = jdbc.queryForObject("SHOW lock_timeout", String.class);
			impatient.claim(message("group", UUID.randomUUID().toString()));
			String afterClaim = jdbc.queryForObject("SHOW lock_timeout", String.class);
			impatient.claimAll(List.of(message("group", UUID.randomUUID().toString())));
			String afterClaimAll = jdbc.queryForObject("SHOW lock_timeout", String.class);
			return List.of(before, afterClaim, afterClaimAll);
		});
		assertThat(settings.get(1)).isEqualTo(settings.get(0));
		assertThat(settings.get(2)).isEqualTo(settings.get(0));
	}

	@Test
	void zeroLockTimeoutWaitsWhateverTheServerDefault() throws Exception {
		try (HikariDataSource impatientByDefault = StoreTables.dataSource()) {
			impatientByDefault.setConnectionInitSql("SET lock_timeout = '100ms'");
			JdbcProcessedMessageStore patient = store(impatientByDefault, Duration.ZERO);
			TransactionTemplate patientTransactions = new TransactionTemplate(
					new DataSourceTransactionManager(impatientByDefault));
			ProcessedMessage message = message("group", UUID.randomUUID().toString());
			CountDownLatch claimed = new CountDownLatch(1);
			CountDownLatch release = new CountDownLatch(1);
			CompletableFuture<Boolean> first = holdClaim(message, claimed, release, false);
			assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
			CompletableFuture<Boolean> second = TestThreads
				.supplyAsync(() -> patientTransactions.execute((status) -> patient.claim(message).isNew()));
			// well past the connection's own 100 ms lock timeout
			Thread.sleep(500);
			release.countDown();
			assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
			assertThat(second.get(10, TimeUnit.SECONDS)).isFalse();
		}
	}

	@Test
	void unclaimGivesKeysUpInsideTheTransaction() {
		ProcessedMessage kept = message("group", UUID.randomUUID().toString());
		ProcessedMessage handedBack = message("group", UUID.randomUUID().toString());
		transactions.execute((status) -> {
			store.claimAll(List.of(kept, handedBack));
			return store.unclaimAll(List.of(handedBack));
		});
		assertThat(store.isProcessed("group", kept.key())).isTrue();
		assertThat(store.isProcessed("group", handedBack.key())).isFalse();
	}

	@Test
	void refusesToClaimInATransactionOfAnotherDataSource() {
		try (HikariDataSource other = StoreTables.dataSource()) {
			TransactionTemplate otherTransactions = new TransactionTemplate(new DataSourceTransactionManager(other));
			ProcessedMessage message = message("group", UUID.randomUUID().toString());
			assertThatIllegalStateException()
				.isThrownBy(() -> otherTransactions.execute((status) -> store.claim(message).isNew()))
				.withMessageContaining("idempotency.transaction-manager");
			assertThat(store.isProcessed("group", message.key())).isFalse();
		}
	}

	@Test
	void cleanupDeletesKeysOlderThanTheRetentionOnly() {
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		String old = "old-" + UUID.randomUUID();
		String fresh = "fresh-" + UUID.randomUUID();
		claimAndComplete(message("cleanup", old));
		claimAndComplete(message("cleanup", fresh));
		jdbc.update("UPDATE " + TABLE + " SET processed_at = now() - interval '8 days' WHERE idempotency_key = ?", old);
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		ProcessedMessageCleanup cleanup = new ProcessedMessageCleanup(jdbc, TABLE, Duration.ofDays(7),
				Duration.ofHours(1), new MicrometerIdempotencyMetrics(registry));
		assertThat(cleanup.deleteExpired()).isGreaterThanOrEqualTo(1);
		assertThat(store.isProcessed("cleanup", old)).isFalse();
		assertThat(store.isProcessed("cleanup", fresh)).isTrue();
		assertThat(registry.get("idempotency.cleanup.deleted").counter().count()).isGreaterThanOrEqualTo(1.0);
	}

	/**
	 * A batch of 16 keys or more is first inserted without {@code ON CONFLICT}, in a
	 * savepoint. One key already processed fails that insert: the batch is claimed again
	 * with {@code ON CONFLICT DO NOTHING}, in the same transaction, which goes on and
	 * commits, with the lock timeout put back.
	 */
	@Test
	void aLargeBatchWithOneProcessedKeyClaimsTheOthersInTheSameTransaction() {
		// a store of its own: after a conflict, a store leaves out the plain insert for a while
		JdbcProcessedMessageStore fresh = store(dataSource, Duration.ofSeconds(5));
		List<ProcessedMessage> batch = batch(20);
		assertThat(claimAndComplete(batch.get(7))).isTrue();
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		List<Object> result = transactions.execute((status) -> {
			String before = jdbc.queryForObject("SHOW lock_timeout", String.class);
			List<Boolean> claims = fresh.claimAll(batch).stream().map(Claim::isNew).toList();
			String after = jdbc.queryForObject("SHOW lock_timeout", String.class);
			return List.of(claims, before.equals(after));
		});
		List<Boolean> expected = new ArrayList<>(Collections.nCopies(20, true));
		expected.set(7, false);
		assertThat(result).containsExactly(expected, true);
		assertThat(batch).allSatisfy((message) -> assertThat(store.isProcessed("group", message.key())).isTrue());
		// and a batch of new keys right after it, now with ON CONFLICT
		List<ProcessedMessage> next = batch(20);
		assertThat(claimAll(fresh, next)).containsOnly(true).hasSize(20);
		assertThat(next).allSatisfy((message) -> assertThat(store.isProcessed("group", message.key())).isTrue());
	}

	@Test
	void aLargeBatchWaitsForAConcurrentClaimOfOneOfItsKeysAndThenSeesItAsADuplicate() throws Exception {
		List<ProcessedMessage> batch = batch(20);
		CountDownLatch claimed = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		CompletableFuture<Boolean> first = holdClaim(batch.get(3), claimed, release, false);
		assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
		JdbcProcessedMessageStore fresh = store(dataSource, Duration.ofSeconds(5));
		CompletableFuture<List<Boolean>> second = TestThreads.supplyAsync(() -> claimAll(fresh, batch));
		Thread.sleep(300);
		assertThat(second).isNotDone();
		release.countDown();
		assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
		List<Boolean> expected = new ArrayList<>(Collections.nCopies(20, true));
		expected.set(3, false);
		assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo(expected);
	}

	@Test
	void aLargeBatchTakesAKeyWhoseConcurrentClaimRollsBack() throws Exception {
		List<ProcessedMessage> batch = batch(20);
		CountDownLatch claimed = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		CompletableFuture<Boolean> first = holdClaim(batch.get(3), claimed, release, true);
		assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
		JdbcProcessedMessageStore fresh = store(dataSource, Duration.ofSeconds(5));
		CompletableFuture<List<Boolean>> second = TestThreads.supplyAsync(() -> claimAll(fresh, batch));
		Thread.sleep(300);
		release.countDown();
		assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
		assertThat(second.get(10, TimeUnit.SECONDS)).containsOnly(true).hasSize(20);
	}

	private static List<Boolean> claimAll(JdbcProcessedMessageStore store, List<ProcessedMessage> messages) {
		return transactions.execute((status) -> store.claimAll(messages).stream().map(Claim::isNew).toList());
	}

	private static List<ProcessedMessage> batch(int size) {
		String prefix = UUID.randomUUID().toString();
		return IntStream.range(0, size).mapToObj((i) -> message("group", prefix + "-" + i)).toList();
	}

	@Test
	void refusesToClaimOutsideATransaction() {
		assertThatIllegalStateException().isThrownBy(() -> store.claim(message("group", "no-transaction")))
			.withMessageContaining("in the listener's transaction");
	}

	/**
	 * Claim in a transaction of another thread and keep it open until released.
	 */
	private static CompletableFuture<Boolean> holdClaim(ProcessedMessage message, CountDownLatch claimed,
			CountDownLatch release, boolean rollBack) {
		return TestThreads.supplyAsync(() -> transactions.execute((status) -> {
			boolean result = store.claim(message).isNew();
			claimed.countDown();
			await(release);
			if (rollBack) {
				status.setRollbackOnly();
			}
			return result;
		}));
	}

	/**
	 * A data source whose connections run the given action before they prepare a statement
	 * that contains the given text.
	 */
	private static DataSource beforeStatement(DataSource target, String text, Runnable action) {
		return new DelegatingDataSource(target) {

			@Override
			public Connection getConnection() throws SQLException {
				Connection connection = super.getConnection();
				return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
						new Class<?>[] { Connection.class }, (proxy, method, args) -> {
							if (method.getName().equals("prepareStatement") && ((String) args[0]).contains(text)) {
								action.run();
							}
							try {
								return method.invoke(connection, args);
							}
							catch (InvocationTargetException ex) {
								throw ex.getCause();
							}
						});
			}

		};
	}

	private static JdbcProcessedMessageStore store(DataSource dataSource, Duration lockTimeout) {
		return new JdbcProcessedMessageStore(new JdbcTemplate(dataSource), TABLE, lockTimeout);
	}

	private static void await(CountDownLatch latch) {
		try {
			latch.await(10, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
