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
		public void cacheRequest(CacheResult result) {
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
	 * Count one lookup in the cache.
	 * @param result its result
	 */
	void cacheRequest(CacheResult result);

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
			public void message(Outcome outcome, DecisionSource source) {
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
		void message(Outcome outcome, DecisionSource source);

		/**
		 * Record the duration of one claim.
		 * @param nanos the duration in nanoseconds
		 */
		void claim(long nanos);

	}

}
