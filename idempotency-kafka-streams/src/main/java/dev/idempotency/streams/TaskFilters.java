package dev.idempotency.streams;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.streams.processor.TaskId;

/**
 * The Bloom pre-check filters of one {@link Deduplication}, one per task. A deduplication
 * applied to several streams gives a task one processor per stream, all on the task's one
 * store: they must see one filter, or a key stored through one processor would be
 * "certainly new" to the others.
 */
final class TaskFilters {

	private final Map<TaskId, Shared> filters = new HashMap<>();

	/**
	 * Return the task's filter, built when the task's first processor starts.
	 * @param task the task
	 * @param build builds the filter from the task's store
	 * @return the filter the task's processors share
	 */
	synchronized Shared acquire(TaskId task, Supplier<SeenKeysFilter> build) {
		Shared shared = this.filters.computeIfAbsent(task, (id) -> new Shared(build.get()));
		shared.users++;
		return shared;
	}

	/**
	 * Let go of the task's filter; the last of its processors to close drops it, so that a
	 * task started again builds it anew from its (possibly restored) store.
	 * @param task the task
	 */
	synchronized void release(TaskId task) {
		Shared shared = this.filters.get(task);
		if (shared != null && --shared.users == 0) {
			this.filters.remove(task);
		}
	}

	/**
	 * The filter of one task, replaced when a purge rebuilds it. Used by the task's
	 * processors only, on the task's thread.
	 */
	static final class Shared {

		SeenKeysFilter current;

		private int users;

		private Shared(SeenKeysFilter current) {
			this.current = current;
		}

	}

}
