package dev.idempotency.internal.outbox;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.idempotency.test.TestThreads;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A transaction on a connection of its own, on another thread, held open after its work
 * until {@link #commit()}: what another application instance's transaction looks like
 * to the code under test.
 */
final class OpenTransaction implements AutoCloseable {

	private final JdbcTemplate jdbc;

	private final CountDownLatch done = new CountDownLatch(1);

	private final CompletableFuture<Integer> backend = new CompletableFuture<>();

	private final CompletableFuture<Void> committed;

	private OpenTransaction(TransactionTemplate transactions, JdbcTemplate jdbc, Runnable work) {
		this.jdbc = jdbc;
		this.committed = TestThreads.runAsync(() -> transactions.executeWithoutResult((status) -> {
			try {
				work.run();
				this.backend.complete(jdbc.queryForObject("SELECT pg_backend_pid()", Integer.class));
				this.done.await(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			catch (RuntimeException ex) {
				this.backend.completeExceptionally(ex);
				throw ex;
			}
		}));
	}

	/**
	 * Run work in a new transaction and keep it open.
	 * @param transactions transactions on the {@code DataSource} of {@code jdbc}
	 * @param jdbc joins those transactions
	 * @param work the work, done once the method returns
	 * @return the open transaction
	 */
	static OpenTransaction begin(TransactionTemplate transactions, JdbcTemplate jdbc, Runnable work) {
		OpenTransaction transaction = new OpenTransaction(transactions, jdbc, work);
		transaction.backend.orTimeout(30, TimeUnit.SECONDS).join();
		return transaction;
	}

	/**
	 * Return whether another session waits for a lock this transaction holds.
	 * @return whether it blocks another session
	 */
	boolean blocksAnother() {
		Integer count = this.jdbc.queryForObject(
				"SELECT count(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", Integer.class,
				this.backend.join());
		return count != null && count > 0;
	}

	/**
	 * Commit, and wait until committed.
	 */
	void commit() {
		this.done.countDown();
		this.committed.orTimeout(30, TimeUnit.SECONDS).join();
	}

	@Override
	public void close() {
		commit();
	}

}
