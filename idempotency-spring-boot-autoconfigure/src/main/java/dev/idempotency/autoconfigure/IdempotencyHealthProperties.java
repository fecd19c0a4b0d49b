package dev.idempotency.autoconfigure;

import java.time.Duration;

import dev.idempotency.internal.outbox.OutboxRepository;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.ConstructorBinding;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Thresholds of the {@code idempotency} health contributor.
 *
 * @param outbox thresholds on the outbox table
 */
@ConfigurationProperties("idempotency.health")
public record IdempotencyHealthProperties(@DefaultValue Outbox outbox) {

	/**
	 * Thresholds on the outbox table, past which the contributor reports
	 * {@code OUT_OF_SERVICE}.
	 *
	 * @param maxDead maximum number of dead events before the outbox is out of service, at
	 * most 10000 (the most dead events the check counts)
	 * @param maxOldestAge maximum age of the oldest pending event before the outbox is out
	 * of service
	 * @param maxReplicationLag maximum WAL held by the replication relay's slot (between
	 * the server's position and the relay's confirmed one) before the outbox is out of
	 * service; only with the replication relay
	 */
	public record Outbox(@DefaultValue("0") long maxDead, @DefaultValue("5m") Duration maxOldestAge,
			@DefaultValue("1GB") DataSize maxReplicationLag) {

		/**
		 * Create the thresholds of earlier versions, with the default replication lag.
		 * @param maxDead maximum number of dead events
		 * @param maxOldestAge maximum age of the oldest pending event
		 */
		public Outbox(long maxDead, Duration maxOldestAge) {
			this(maxDead, maxOldestAge, DataSize.ofGigabytes(1));
		}

		@ConstructorBinding
		public Outbox {
			if (maxDead < 0) {
				throw new IllegalArgumentException(
						"idempotency.health.outbox.max-dead must not be negative, was " + maxDead);
			}
			if (maxDead > OutboxRepository.MAX_COUNTED) {
				throw new IllegalArgumentException("idempotency.health.outbox.max-dead must be at most "
						+ OutboxRepository.MAX_COUNTED + " (the outbox counts no further), was " + maxDead);
			}
			if (maxOldestAge.isNegative() || maxOldestAge.isZero()) {
				throw new IllegalArgumentException(
						"idempotency.health.outbox.max-oldest-age must be positive, was " + maxOldestAge);
			}
			if (maxReplicationLag.isNegative()) {
				throw new IllegalArgumentException(
						"idempotency.health.outbox.max-replication-lag must not be negative, was " + maxReplicationLag);
			}
		}

	}

}
