package dev.idempotency.metrics;

/**
 * Records the decisions of {@code @Idempotent} listeners. The default records nothing;
 * with a Micrometer {@code MeterRegistry} the meters of {@link IdempotencyMeters} are
 * written.
 */
public interface IdempotencyMetrics {

	/**
	 * A recorder that records nothing.
	 */
	IdempotencyMetrics NONE = (listener, store) -> ListenerMetrics.NONE;

	/**
	 * Return the recorder of one listener. Called once per listener method; the result is
	 * kept and used for each message.
	 * @param listener the listener tag value
	 * @param store the store tag value
	 * @return the listener's recorder
	 */
	ListenerMetrics listener(String listener, String store);

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
