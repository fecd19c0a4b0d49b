package dev.idempotency.internal.outbox;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import dev.idempotency.outbox.OutboxMetrics;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.SmartLifecycle;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Publishes outbox events to Kafka as PostgreSQL's logical replication stream carries
 * them: the inserts into the outbox table, through a publication of them and a slot
 * decoded by the built-in {@code pgoutput} plugin, in commit order. No poll of the table
 * finds them; the rows are deleted (or marked) in one statement per batch once the
 * broker acknowledged them, and the slot's position moves past a transaction only once
 * each of its events is acknowledged or parked in the table (see {@link OutboxParking}).
 * A crash re-sends, from the confirmed position, events that may have been sent: with
 * their event ids, so that consumers absorb them.
 * <p>
 * Any number of instances run it; PostgreSQL lets one connection stream a slot at a
 * time, so one instance is the active reader and the others retry every
 * {@code standby-retry-interval}, taking over once its connection is gone.
 * <p>
 * A {@link SmartLifecycle}: it starts with the application context unless
 * {@link #setAutoStartup(boolean) auto-startup} is off. Starting checks that the server
 * and the role can replicate, and fails with the property to change when they cannot.
 */
public final class OutboxReplicationRelay implements SmartLifecycle {

	private static final Log logger = LogFactory.getLog(OutboxReplicationRelay.class);

	private static final String SLOT_STATE = """
			SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn)::bigint AS lag, s.active,
			    to_jsonb(s) ->> 'wal_status' AS wal_status
			FROM pg_replication_slots s WHERE s.slot_name = ?
			""";

	private final OutboxRepository repository;

	private final JdbcTemplate jdbc;

	private final KafkaTemplate<String, byte[]> kafka;

	private final OutboxSettings settings;

	private final ReplicationSettings replication;

	private final OutboxMetrics metrics;

	private final ReplicationConnector connector;

	private final ReplicationStreamLoop loop;

	private boolean autoStartup = true;

	private @Nullable Thread thread;

	private @Nullable ScheduledExecutorService housekeeper;

	/**
	 * Create a relay.
	 * @param repository the outbox table
	 * @param jdbc the template on the outbox's {@code DataSource}
	 * @param transactions transactions on that {@code DataSource}
	 * @param kafka the template that sends (an idempotent producer)
	 * @param settings the relay's settings
	 * @param replication how the stream is read
	 * @param metrics records what the relay does
	 */
	public OutboxReplicationRelay(OutboxRepository repository, JdbcTemplate jdbc, TransactionTemplate transactions,
			KafkaTemplate<String, byte[]> kafka, OutboxSettings settings, ReplicationSettings replication,
			OutboxMetrics metrics) {
		this.repository = repository;
		this.jdbc = jdbc;
		this.kafka = kafka;
		this.settings = settings;
		this.replication = replication;
		this.metrics = metrics;
		OutboxParking parking = new OutboxParking(jdbc, transactions, replication.table(), settings.batchSize());
		this.connector = new ReplicationConnector(replication, jdbc, parking);
		ReplicationDelivery delivery = new ReplicationDelivery(repository, parking, kafka, settings, metrics,
				new TransactionVisibility(jdbc));
		this.loop = new ReplicationStreamLoop(replication, settings, this.connector, delivery);
	}

	/**
	 * Set whether the relay starts with the application context.
	 * @param autoStartup whether to start with the context
	 */
	public void setAutoStartup(boolean autoStartup) {
		this.autoStartup = autoStartup;
	}

	@Override
	public boolean isAutoStartup() {
		return this.autoStartup;
	}

	/**
	 * Tell the relay that events were committed: it reads the stream eagerly for a while.
	 */
	public void wakeUp() {
		this.loop.wakeUp();
	}

	/**
	 * Return whether this instance is the active reader of the slot now.
	 * @return whether it streams the slot
	 */
	public boolean isActive() {
		return this.loop.isActive();
	}

	/**
	 * Read the state of the slot.
	 * @return the state, {@code null} when the slot does not exist
	 */
	public @Nullable SlotState slotState() {
		List<SlotState> states = this.jdbc.query(SLOT_STATE, (row, rowNum) -> {
			long lag = row.getLong("lag");
			return new SlotState(row.wasNull() ? null : lag, row.getBoolean("active"), row.getString("wal_status"),
					this.loop.problem());
		}, this.replication.slot());
		return states.isEmpty() ? null : states.get(0);
	}

	/**
	 * Return the name of the slot.
	 * @return the slot
	 */
	public String slotName() {
		return this.replication.slot();
	}

	@Override
	public synchronized void start() {
		if (this.loop.isRunning()) {
			return;
		}
		checkServer();
		this.loop.setRunning(true);
		Thread relay = new Thread(this.loop, "idempotency-outbox-replication");
		relay.setDaemon(true);
		relay.start();
		this.thread = relay;
		ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor((task) -> {
			Thread housekeeping = new Thread(task, "idempotency-outbox-housekeeping");
			housekeeping.setDaemon(true);
			return housekeeping;
		});
		scheduler.scheduleWithFixedDelay(this::housekeeping, 0, 10, TimeUnit.SECONDS);
		this.housekeeper = scheduler;
	}

	// A server or role that cannot replicate is a configuration error: the application
	// does not start. The slot is created now, so that every event committed once the
	// application has started is in its stream. A server that cannot be reached now is
	// retried by the loop.
	private void checkServer() {
		Connection connection;
		try {
			connection = this.connector.connect();
		}
		catch (SQLException ex) {
			logger.warn("Could not check the replication connection at start-up; the relay keeps trying: " + ex);
			return;
		}
		try {
			this.connector.prepare(connection);
		}
		catch (SQLException | DataAccessException ex) {
			logger.warn("Could not create the replication slot at start-up; the relay keeps trying: " + ex);
		}
		finally {
			ReplicationConnector.closeQuietly(connection);
		}
	}

	/**
	 * Stop after the batch in flight (its acknowledgments awaited up to the shutdown
	 * timeout), confirm what was sent, and let go of the slot for another instance.
	 */
	@Override
	public synchronized void stop() {
		this.loop.setRunning(false);
		ScheduledExecutorService scheduler = this.housekeeper;
		if (scheduler != null) {
			scheduler.shutdownNow();
			this.housekeeper = null;
		}
		Thread relay = this.thread;
		if (relay != null) {
			join(relay);
			if (relay.isAlive()) {
				relay.interrupt();
				this.loop.abort();
				join(relay);
			}
			this.thread = null;
			if (relay.isAlive()) {
				logger.warn("The outbox replication relay did not stop within " + this.settings.shutdownTimeout());
			}
		}
		if (this.kafka.getProducerFactory() instanceof DefaultKafkaProducerFactory<?, ?> producers) {
			producers.destroy();
		}
	}

	private void join(Thread relay) {
		try {
			relay.join(this.settings.shutdownTimeout().toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	@Override
	public boolean isRunning() {
		return this.loop.isRunning();
	}

	@Override
	public int getPhase() {
		// stop before the Kafka producer and the DataSource go away
		return SmartLifecycle.DEFAULT_PHASE - 1024;
	}

	private void housekeeping() {
		try {
			this.metrics.stats(this.repository.stats());
			this.metrics.oldestPending(this.repository.oldestPendingAge());
			if (!this.settings.deleteSent()) {
				this.repository.purgeSent(this.settings.retention());
			}
			SlotState state = slotState();
			if (state != null && state.lagBytes() != null) {
				this.metrics.replicationLag(state.lagBytes());
			}
		}
		catch (RuntimeException ex) {
			// a failed run must not cancel the next ones
			logger.warn("Outbox statistics failed; trying again in 10 seconds: " + ex);
		}
	}

	/**
	 * The state of the slot, as the server reports it.
	 *
	 * @param lagBytes the WAL between the server's current position and the slot's
	 * confirmed one, or {@code null} when unknown
	 * @param active whether a connection streams the slot
	 * @param walStatus the server's {@code wal_status} of the slot ({@code lost} once
	 * invalidated), or {@code null} before PostgreSQL 13
	 * @param problem why this instance last failed to stream it, or {@code null}
	 */
	public record SlotState(@Nullable Long lagBytes, boolean active, @Nullable String walStatus,
			@Nullable String problem) {

		/**
		 * Return whether the server invalidated the slot: it can stream no more.
		 * @return whether the slot is lost
		 */
		public boolean invalidated() {
			return "lost".equals(this.walStatus);
		}

	}

}
