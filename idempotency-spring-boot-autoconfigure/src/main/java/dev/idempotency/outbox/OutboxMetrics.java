package dev.idempotency.outbox;

import java.time.Duration;

/**
 * Records what the outbox relay does. The default records nothing; with a Micrometer
 * {@code MeterRegistry} the {@code idempotency.outbox.*} meters are written.
 */
public interface OutboxMetrics {

	/**
	 * A recorder that records nothing.
	 */
	OutboxMetrics NONE = new OutboxMetrics() {

		@Override
		public void published(String topic, Duration latency) {
		}

		@Override
		public void failed(String topic, Throwable exception) {
		}

		@Override
		public void stats(OutboxRepository.Stats stats) {
		}

	};

	/**
	 * Count one event acknowledged by the broker.
	 * @param topic its topic
	 * @param latency from its insert in the outbox to the acknowledgment
	 */
	void published(String topic, Duration latency);

	/**
	 * Count one failed attempt.
	 * @param topic the event's topic
	 * @param exception why it failed
	 */
	void failed(String topic, Throwable exception);

	/**
	 * Record the state of the outbox table.
	 * @param stats pending and dead events, and the oldest pending one
	 */
	void stats(OutboxRepository.Stats stats);

}
