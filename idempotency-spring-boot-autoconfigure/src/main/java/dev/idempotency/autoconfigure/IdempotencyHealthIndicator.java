package dev.idempotency.autoconfigure;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.idempotency.internal.outbox.OutboxReplicationRelay;
import dev.idempotency.internal.outbox.OutboxRepository;
import dev.idempotency.outbox.OutboxStats;
import dev.idempotency.internal.store.TableName;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Health of the processed-message store and the outbox: {@code DOWN} when the store's
 * table cannot be read, {@code OUT_OF_SERVICE} when the outbox has more dead events, or an
 * older pending event, than its thresholds allow. The pending and dead events are counted
 * up to {@link OutboxRepository#MAX_COUNTED} (a larger count reads "more than 10000"), so
 * that a check costs the same whatever the backlog.
 */
final class IdempotencyHealthIndicator extends AbstractHealthIndicator {

	private final @Nullable JdbcTemplate store;

	private final @Nullable String storeProbe;

	private final @Nullable OutboxRepository outbox;

	private final @Nullable OutboxReplicationRelay replication;

	private final IdempotencyHealthProperties.Outbox thresholds;

	/**
	 * Create an indicator.
	 * @param store the template on the store's {@code DataSource}, or {@code null} when the
	 * store is not the JDBC one
	 * @param table the store's table
	 * @param outbox the outbox table, or {@code null} without an outbox
	 * @param replication the replication relay, or {@code null} without one
	 * @param thresholds the outbox thresholds
	 */
	IdempotencyHealthIndicator(@Nullable JdbcTemplate store, TableName table, @Nullable OutboxRepository outbox,
			@Nullable OutboxReplicationRelay replication, IdempotencyHealthProperties.Outbox thresholds) {
		super("Idempotency health check failed");
		this.store = store;
		this.storeProbe = "SELECT count(*) FROM (SELECT 1 FROM %s LIMIT 1) AS probe".formatted(table.qualified());
		this.outbox = outbox;
		this.replication = replication;
		this.thresholds = thresholds;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		if (this.store != null) {
			// the store's own table: the database answers and the table is there
			this.store.queryForObject(this.storeProbe, Long.class);
			builder.withDetail("store", "jdbc");
		}
		builder.up();
		if (this.outbox == null) {
			return;
		}
		OutboxStats stats = this.outbox.stats();
		Duration oldest = this.outbox.oldestPendingAge();
		builder.withDetail("pending", counted(stats.pending()))
			.withDetail("dead", counted(stats.dead()))
			.withDetail("oldestPendingAge", (oldest != null) ? oldest.toString() : Duration.ZERO.toString());
		// max-dead is at most MAX_COUNTED, so a count that stopped there is over it
		if (stats.dead() > this.thresholds.maxDead()) {
			builder.outOfService()
				.withDetail("reason", counted(stats.dead())
						+ " dead outbox events (idempotency.health.outbox.max-dead=" + this.thresholds.maxDead() + ")");
		}
		else if (oldest != null && oldest.compareTo(this.thresholds.maxOldestAge()) > 0) {
			builder.outOfService()
				.withDetail("reason", "the oldest pending outbox event is " + oldest
						+ " old (idempotency.health.outbox.max-oldest-age=" + this.thresholds.maxOldestAge() + ")");
		}
		if (this.replication != null) {
			replicationHealth(builder, this.replication);
		}
	}

	/**
	 * The slot of the replication relay: {@code DOWN} when the server invalidated it or it
	 * is missing (no event is relayed), {@code OUT_OF_SERVICE} when it holds more WAL than
	 * the threshold allows.
	 */
	private void replicationHealth(Health.Builder builder, OutboxReplicationRelay relay) {
		OutboxReplicationRelay.SlotState slot = relay.slotState();
		Map<String, Object> details = new LinkedHashMap<>();
		details.put("slot", relay.slotName());
		details.put("activeHere", relay.isActive());
		if (slot == null) {
			if (!relay.isRunning()) {
				// not started yet: it creates the slot when it starts
				builder.withDetail("replication", details);
				return;
			}
			builder.down().withDetail("replication", details)
				.withDetail("reason", "the replication slot " + relay.slotName() + " does not exist");
			return;
		}
		details.put("active", slot.active());
		if (slot.lagBytes() != null) {
			details.put("lagBytes", slot.lagBytes());
		}
		if (slot.walStatus() != null) {
			details.put("walStatus", slot.walStatus());
		}
		if (slot.problem() != null) {
			details.put("problem", slot.problem());
		}
		builder.withDetail("replication", details);
		if (slot.invalidated()) {
			builder.down()
				.withDetail("reason", "the replication slot " + relay.slotName() + " is invalidated: no event is "
						+ "relayed until it is dropped and created again (see the README's recovery procedure)");
		}
		else if (slot.lagBytes() != null && slot.lagBytes() > this.thresholds.maxReplicationLag().toBytes()) {
			builder.outOfService()
				.withDetail("reason", "the replication slot " + relay.slotName() + " holds " + slot.lagBytes()
						+ " bytes of WAL (idempotency.health.outbox.max-replication-lag="
						+ this.thresholds.maxReplicationLag() + ")");
		}
	}

	/**
	 * Return a count of the outbox statistics as a number, or as "more than" the most
	 * they count.
	 */
	private static Object counted(long count) {
		return (count > OutboxRepository.MAX_COUNTED) ? "more than " + OutboxRepository.MAX_COUNTED : count;
	}

}
