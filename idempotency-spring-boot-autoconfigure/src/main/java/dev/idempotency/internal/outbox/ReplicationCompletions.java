package dev.idempotency.internal.outbox;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;

/**
 * Completes the replication relay's sent batches (their rows deleted or marked, once
 * their transactions are visible) on a thread of its own, beside the sending of the next
 * batch, and tells how far the slot's position may move: past a batch's transactions only
 * once its rows are completed, so that a crash never leaves a sent row behind a confirmed
 * position (it would stay pending for ever); at worst it is sent again. At most two
 * completions are in flight; while the stream's thread waits for one, it keeps the stream
 * alive.
 */
final class ReplicationCompletions implements AutoCloseable {

	private static final int IN_FLIGHT = 2;

	private static final long WAIT_STEP_MILLIS = 100;

	private final BiConsumer<List<Long>, Set<Integer>> completion;

	private final Runnable whileWaiting;

	private final ExecutorService executor = Executors.newSingleThreadExecutor((task) -> {
		Thread thread = new Thread(task, "idempotency-outbox-completion");
		thread.setDaemon(true);
		return thread;
	});

	private final Deque<Pending> pending = new ArrayDeque<>();

	private long donePosition;

	/**
	 * Create the completions of one stream.
	 * @param completion completes sent events, given their ids and their transactions
	 * @param whileWaiting run every 100 ms while the stream's thread waits for a
	 * completion: answers the server if it is time to
	 */
	ReplicationCompletions(BiConsumer<List<Long>, Set<Integer>> completion, Runnable whileWaiting) {
		this.completion = completion;
		this.whileWaiting = whileWaiting;
	}

	/**
	 * Complete a batch's sent events.
	 * @param sent their ids
	 * @param transactions the transactions they come from
	 * @param position the position that may be confirmed once they are completed: the end
	 * of the last transaction the batch completed, or 0
	 * @throws IllegalStateException if a completion failed (the relay streams again from
	 * the confirmed position)
	 */
	void submit(List<Long> sent, Set<Integer> transactions, long position) {
		while (this.pending.size() >= IN_FLIGHT) {
			take();
		}
		CompletableFuture<Void> done = sent.isEmpty() ? CompletableFuture.completedFuture(null)
				: CompletableFuture.runAsync(() -> this.completion.accept(sent, transactions), this.executor);
		this.pending.addLast(new Pending(done, position));
	}

	/**
	 * Return how far the slot's position may move: the given position when no completion
	 * is in flight, else the position of the last completion done, in order.
	 * @param position the end of the last transaction whose events are all delivered
	 * @return the position to confirm
	 * @throws IllegalStateException if a completion failed (the relay streams again from
	 * the confirmed position)
	 */
	long confirmable(long position) {
		while (!this.pending.isEmpty() && this.pending.peekFirst().done().isDone()) {
			take();
		}
		return this.pending.isEmpty() ? Math.max(this.donePosition, position) : this.donePosition;
	}

	/**
	 * Wait for every completion in flight.
	 * @throws IllegalStateException if one failed
	 */
	void awaitAll() {
		while (!this.pending.isEmpty()) {
			take();
		}
	}

	// waits for the oldest completion in flight
	private void take() {
		Pending first = this.pending.removeFirst();
		while (true) {
			try {
				first.done().get(WAIT_STEP_MILLIS, TimeUnit.MILLISECONDS);
				break;
			}
			catch (TimeoutException ex) {
				// a completion waits for its transactions' visibility, or for the database
				this.whileWaiting.run();
			}
			catch (ExecutionException | RuntimeException ex) {
				throw new IllegalStateException("Could not complete sent outbox events; they are streamed again",
						(ex.getCause() != null) ? ex.getCause() : ex);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted while completing sent outbox events; they are streamed "
						+ "again", ex);
			}
		}
		this.donePosition = Math.max(this.donePosition, first.position());
	}

	/**
	 * Stop the completions: those not done are dropped (after a stop every one is done;
	 * after a failure, the rows of those dropped stay behind the confirmed position and are
	 * streamed again).
	 */
	@Override
	public void close() {
		this.executor.shutdownNow();
		try {
			this.executor.awaitTermination(1, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private record Pending(CompletableFuture<Void> done, long position) {
	}

}
