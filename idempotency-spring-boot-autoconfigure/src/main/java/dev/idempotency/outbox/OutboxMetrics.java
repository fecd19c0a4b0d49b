package dev.idempotency.outbox;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

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
		public void stats(OutboxStats stats) {
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
	 * Record the age of the oldest pending event, as just read from the table. The relay
	 * reads it after each cycle, so it is at most one cycle (or one poll interval) old.
	 * @param age the age, or {@code null} when no event is pending
	 */
	default void oldestPending(@Nullable Duration age) {
	}

	/**
	 * Record the lag of the replication relay's slot: the WAL, in bytes, between the
	 * server's current position and the position the relay confirmed. Only the replication
	 * relay records it, every 10 seconds.
	 * @param bytes the lag in bytes
	 */
	default void replicationLag(long bytes) {
	}

	/**
	 * Record the state of the outbox table.
	 * @param stats pending and dead events (its oldest pending event is not used for the
	 * age, which {@link #oldestPending(Duration)} records more often)
	 */
	void stats(OutboxStats stats);

}
