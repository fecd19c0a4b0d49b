package dev.idempotency.streams;

import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.streams.processor.TaskId;
import org.jspecify.annotations.Nullable;

/**
 * The Bloom pre-check filters of one {@link Deduplication}, one per task. A deduplication
 * applied to several streams gives a task one processor per stream, all on the task's one
 * store: they must see one filter, or a key stored through one processor would be
 * "certainly new" to the others.
 */
final class TaskFilters {

	private final Map<TaskId, Shared> filters = new HashMap<>();

	/**
	 * Return the task's filter, without keys until a scan of the store has built it.
	 * @param task the task
	 * @return the filter the task's processors share
	 */
	synchronized Shared acquire(TaskId task) {
		Shared shared = this.filters.computeIfAbsent(task, (id) -> new Shared());
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
	 * The filter of one task, replaced when a scan of the store has built the next one.
	 * Used by the task's processors only, on the task's thread.
	 */
	static final class Shared {

		// null until a scan of the store has built it: until then, every key may be held
		@Nullable SeenKeysFilter current;

		// the filter a scan under way builds; every key stored meanwhile goes into it too,
		// so that it holds the keys stored behind the scan as well as those it reads
		@Nullable SeenKeysFilter next;

		// the processor whose scan builds next
		@Nullable Object builder;

		private int users;

		private Shared() {
		}

		/**
		 * Return whether the task's store might hold the key ({@code false}: it does not).
		 */
		boolean mightContain(String key) {
			return this.current == null || this.current.mightContain(key);
		}

		/**
		 * Add a key that is being stored.
		 * @return whether the store might have held it already ({@code false}: it
		 * certainly did not)
		 */
		boolean put(String key) {
			boolean held = true;
			if (this.current != null) {
				held = this.current.put(key);
				if (this.current.full()) {
					this.current = this.current.grown();
				}
			}
			putNext(key);
			return held;
		}

		/**
		 * Add a key to the next filter only: a key that the scan which builds it keeps.
		 */
		void putNext(String key) {
			if (this.next != null) {
				this.next.put(key);
				if (this.next.full()) {
					this.next = this.next.grown();
				}
			}
		}

		/**
		 * Start building the next filter, unless another processor's scan builds it.
		 * @return whether the caller builds it
		 */
		boolean startBuilding(Object scanner, SeenKeysFilter empty) {
			if (this.builder != null) {
				return false;
			}
			this.builder = scanner;
			this.next = empty;
			return true;
		}

		/**
		 * Put the next filter in place of the current one: the caller's scan has read the
		 * whole store.
		 */
		void finishBuilding(Object scanner) {
			if (this.builder == scanner) {
				this.current = this.next;
				this.next = null;
				this.builder = null;
			}
		}

		/**
		 * Drop the next filter: the caller's scan stopped before the end of the store.
		 */
		void abandonBuilding(Object scanner) {
			if (this.builder == scanner) {
				this.next = null;
				this.builder = null;
			}
		}

	}

}
