package dev.idempotency.test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * {@link CompletableFuture#supplyAsync} and {@link CompletableFuture#runAsync} with a
 * thread of their own for each task, for test work that blocks: holds a lock, waits for a
 * latch, a transaction or a server. Without an executor, both use ForkJoinPool's common
 * pool, which has one thread on a 2-CPU machine; Java 17 then started a thread per task,
 * Java 25 queues the tasks on that one thread, so a task that waits for another one queued
 * behind it waits for ever.
 */
public final class TestThreads {

	private static final Executor THREAD_PER_TASK = (task) -> {
		Thread thread = new Thread(task, "test-async");
		thread.setDaemon(true);
		thread.start();
	};

	private TestThreads() {
	}

	/**
	 * Run the supplier on a new thread.
	 * @param <T> the type of the result
	 * @param supplier the work
	 * @return its result, to come
	 */
	public static <T> CompletableFuture<T> supplyAsync(Supplier<T> supplier) {
		return CompletableFuture.supplyAsync(supplier, THREAD_PER_TASK);
	}

	/**
	 * Run the work on a new thread.
	 * @param work the work
	 * @return its completion, to come
	 */
	public static CompletableFuture<Void> runAsync(Runnable work) {
		return CompletableFuture.runAsync(work, THREAD_PER_TASK);
	}

}
