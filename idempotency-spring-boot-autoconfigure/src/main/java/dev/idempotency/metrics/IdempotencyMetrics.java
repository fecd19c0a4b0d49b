package dev.idempotency.metrics;

import java.util.function.BooleanSupplier;

/**
 * Records the decisions of {@code @Idempotent} listeners. The default records nothing;
 * with a Micrometer {@code MeterRegistry} the meters of {@link IdempotencyMeters} are
 * written.
 */
public interface IdempotencyMetrics {

	/**
	 * A recorder that records nothing.
	 */
	IdempotencyMetrics NONE = new IdempotencyMetrics() {

		@Override
		public ListenerMetrics listener(String listener, String store) {
			return ListenerMetrics.NONE;
		}

		@Override
		public void cacheRequests(CacheResult result, int count) {
		}

		@Override
		public void cacheBreaker(BooleanSupplier open) {
		}

		@Override
		public void cleanupDeleted(long count) {
		}

	};

	/**
	 * Return the recorder of one listener. Called once per listener method; the result is
	 * kept and used for each message.
	 * @param listener the listener tag value
	 * @param store the store tag value
	 * @return the listener's recorder
	 */
	ListenerMetrics listener(String listener, String store);

	/**
	 * Count lookups in the cache.
	 * @param result their result
	 * @param count how many
	 */
	void cacheRequests(CacheResult result, int count);

	/**
	 * Expose the state of the cache's breaker.
	 * @param open whether the breaker is open (the cache is not being asked)
	 */
	void cacheBreaker(BooleanSupplier open);

	/**
	 * Count processed keys deleted after their retention.
	 * @param count the number deleted
	 */
	void cleanupDeleted(long count);

	/**
	 * Records the decisions of one listener.
	 */
	interface ListenerMetrics {

		/**
		 * A recorder that records nothing.
		 */
		ListenerMetrics NONE = new ListenerMetrics() {

			@Override
			public void messages(Outcome outcome, DecisionSource source, int count) {
			}

			@Override
			public void claim(long nanos) {
			}

		};

		/**
		 * Count one message with the given decision.
		 * @param outcome the decision
		 * @param source where it came from
		 */
		default void message(Outcome outcome, DecisionSource source) {
			messages(outcome, source, 1);
		}

		/**
		 * Count messages with the given decision.
		 * @param outcome the decision
		 * @param source where it came from
		 * @param count how many
		 */
		void messages(Outcome outcome, DecisionSource source, int count);

		/**
		 * Record the duration of one claim.
		 * @param nanos the duration in nanoseconds
		 */
		void claim(long nanos);

		/**
		 * Count a lease lost before completion.
		 */
		default void leaseLost() {
		}

		/**
		 * Count a record whose key was claimed for another payload.
		 * @param policy the tag of the policy applied: {@code reject} or {@code warn}
		 */
		default void fingerprintMismatch(String policy) {
		}

	}

}
