package dev.idempotency.autoconfigure;

import java.time.Duration;

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

	private final IdempotencyHealthProperties.Outbox thresholds;

	/**
	 * Create an indicator.
	 * @param store the template on the store's {@code DataSource}, or {@code null} when the
	 * store is not the JDBC one
	 * @param table the store's table
	 * @param outbox the outbox table, or {@code null} without an outbox
	 * @param thresholds the outbox thresholds
	 */
	IdempotencyHealthIndicator(@Nullable JdbcTemplate store, TableName table, @Nullable OutboxRepository outbox,
			IdempotencyHealthProperties.Outbox thresholds) {
		super("Idempotency health check failed");
		this.store = store;
		this.storeProbe = "SELECT count(*) FROM (SELECT 1 FROM %s LIMIT 1) AS probe".formatted(table.qualified());
		this.outbox = outbox;
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
	}

	/**
	 * Return a count of the outbox statistics as a number, or as "more than" the most
	 * they count.
	 */
	private static Object counted(long count) {
		return (count > OutboxRepository.MAX_COUNTED) ? "more than " + OutboxRepository.MAX_COUNTED : count;
	}

}
