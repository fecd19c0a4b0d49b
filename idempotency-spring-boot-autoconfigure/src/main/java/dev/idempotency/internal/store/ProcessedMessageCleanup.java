package dev.idempotency.internal.store;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import dev.idempotency.metrics.IdempotencyMetrics;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.SmartLifecycle;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Deletes processed keys older than the retention, in small batches so that no delete
 * holds many row locks or runs long. Several application instances may run it at once;
 * a row is deleted once either way. An interval of zero never deletes.
 */
public final class ProcessedMessageCleanup implements SmartLifecycle {

	private static final Log logger = LogFactory.getLog(ProcessedMessageCleanup.class);

	private static final int BATCH = 10_000;

	// A lease-mode claim in progress is kept while its lease lasts, however old: deleted, its
	// key could be claimed again while its first consumer still works on it.
	private static final String DELETE = """
			DELETE FROM %1$s WHERE ctid = ANY (ARRAY (
			    SELECT ctid FROM %1$s WHERE processed_at < now() - make_interval(secs => ?)
			      AND (status IS DISTINCT FROM 'IN_PROGRESS' OR lease_until < now())
			    LIMIT ?))
			""";

	private final JdbcTemplate jdbcTemplate;

	private final String deleteSql;

	private final double retentionSeconds;

	private final Duration interval;

	private final IdempotencyMetrics metrics;

	private @Nullable ScheduledExecutorService executor;

	/**
	 * Create a cleanup.
	 * @param jdbcTemplate the template on the store's {@code DataSource}
	 * @param table the processed-messages table
	 * @param retention how long keys are kept
	 * @param interval how often to delete
	 * @param metrics counts deleted keys
	 */
	public ProcessedMessageCleanup(JdbcTemplate jdbcTemplate, TableName table, Duration retention, Duration interval,
			IdempotencyMetrics metrics) {
		this.jdbcTemplate = jdbcTemplate;
		this.deleteSql = DELETE.formatted(table.qualified());
		this.retentionSeconds = retention.toMillis() / 1000.0;
		this.interval = interval;
		this.metrics = metrics;
	}

	/**
	 * Delete the keys older than the retention now.
	 * @return the number of keys deleted
	 */
	public long deleteExpired() {
		long total = 0;
		int deleted;
		do {
			deleted = this.jdbcTemplate.update(this.deleteSql, this.retentionSeconds, BATCH);
			total += deleted;
			this.metrics.cleanupDeleted(deleted);
		}
		while (deleted == BATCH);
		if (total > 0 && logger.isDebugEnabled()) {
			logger.debug("Deleted " + total + " processed keys older than the retention");
		}
		return total;
	}

	@Override
	public synchronized void start() {
		if (this.executor != null || this.interval.isZero()) {
			return;
		}
		ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor((task) -> {
			Thread thread = new Thread(task, "idempotency-cleanup");
			thread.setDaemon(true);
			return thread;
		});
		long period = this.interval.toMillis();
		scheduler.scheduleWithFixedDelay(this::deleteQuietly, period, period, TimeUnit.MILLISECONDS);
		this.executor = scheduler;
	}

	@Override
	public synchronized void stop() {
		if (this.executor != null) {
			this.executor.shutdownNow();
			this.executor = null;
		}
	}

	@Override
	public synchronized boolean isRunning() {
		return this.executor != null;
	}

	private void deleteQuietly() {
		try {
			deleteExpired();
		}
		catch (RuntimeException ex) {
			logger.warn("Could not delete expired processed keys; will try again in " + this.interval + ": " + ex);
		}
	}

}
