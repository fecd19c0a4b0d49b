package dev.idempotency.internal.outbox;

import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import dev.idempotency.internal.outbox.PgOutputDecoder.Begin;
import dev.idempotency.internal.outbox.PgOutputDecoder.Change;
import dev.idempotency.internal.outbox.PgOutputDecoder.Commit;
import dev.idempotency.internal.outbox.PgOutputDecoder.Insert;
import dev.idempotency.internal.outbox.PgOutputDecoder.Row;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.replication.LogSequenceNumber;
import org.postgresql.replication.PGReplicationStream;

import org.springframework.core.NestedExceptionUtils;

/**
 * The thread of the {@link OutboxReplicationRelay}: takes the slot when no other instance
 * streams it (PostgreSQL lets one connection stream a slot at a time; the others retry
 * every {@code standby-retry-interval}), then reads the stream in commit order. Events are
 * gathered into batches (up to the batch size, or whatever the stream had ready), each
 * delivered (see {@link ReplicationDelivery}) before the slot's position is confirmed
 * past the transactions it completed. While the stream is idle the position follows the
 * server's, and the events parked in the table are sent when due.
 */
final class ReplicationStreamLoop implements Runnable {

	private static final Log logger = LogFactory.getLog(OutboxReplicationRelay.class);

	// How long the stream is polled fast after data or a local commit, and how often it
	// is polled when idle: a new event waits for at most one idle poll (besides the read's
	// own look at the socket, up to a millisecond; see ReplicationConnector).
	private static final long BUSY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

	private static final long BUSY_POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(100);

	private static final long IDLE_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

	// an invalidated slot is logged at ERROR once a minute, not on every retry
	private static final long ERROR_EVERY = TimeUnit.MINUTES.toNanos(1);

	private final ReplicationSettings settings;

	private final OutboxSettings outbox;

	private final ReplicationConnector connector;

	private final ReplicationDelivery delivery;

	private final Semaphore wakeUps = new Semaphore(0);

	private final Semaphore stops = new Semaphore(0);

	private volatile boolean running;

	// when the relay last answered the server while it read nothing (see keepAlive)
	private long lastStatus = System.nanoTime();

	private volatile boolean active;

	private volatile @Nullable String problem;

	private long problemLoggedAt;

	private volatile @Nullable Connection connection;

	// the batch in flight, for the stream's failure
	private ReplicationDelivery.@Nullable InFlight unsettled;

	private final long readAheadNanos;

	ReplicationStreamLoop(ReplicationSettings settings, OutboxSettings outbox, ReplicationConnector connector,
			ReplicationDelivery delivery) {
		this.settings = settings;
		this.outbox = outbox;
		this.connector = connector;
		this.delivery = delivery;
		this.readAheadNanos = Math.min(TimeUnit.SECONDS.toNanos(1), outbox.sendTimeout().toNanos() / 2);
	}

	boolean isRunning() {
		return this.running;
	}

	void setRunning(boolean running) {
		this.running = running;
		if (running) {
			this.stops.drainPermits();
		}
		else {
			this.stops.release();
		}
	}

	/**
	 * Return whether this instance streams the slot now.
	 */
	boolean isActive() {
		return this.active;
	}

	/**
	 * Return why the relay last failed to stream the slot (other than another instance
	 * streaming it), or {@code null} while it streams or stands by without trouble.
	 */
	@Nullable String problem() {
		return this.problem;
	}

	void wakeUp() {
		if (this.wakeUps.availablePermits() == 0) {
			this.wakeUps.release();
		}
	}

	/**
	 * Close the replication connection under the thread, when it does not stop in time.
	 */
	void abort() {
		Connection current = this.connection;
		if (current != null) {
			ReplicationConnector.closeQuietly(current);
		}
	}

	@Override
	public void run() {
		while (this.running) {
			Connection current = null;
			try {
				current = this.connector.connect();
				this.connection = current;
				this.connector.prepare(current);
				PGReplicationStream stream = this.connector.start(current);
				this.active = true;
				this.problem = null;
				logger.info("Streaming replication slot " + this.settings.slot() + ": this instance relays the outbox");
				this.delivery.refreshParked();
				stream(stream);
			}
			catch (SQLException | RuntimeException ex) {
				failed(ex);
			}
			finally {
				if (this.active) {
					logger.info("Stopped streaming replication slot " + this.settings.slot());
				}
				this.active = false;
				this.connection = null;
				if (current != null) {
					ReplicationConnector.closeQuietly(current);
				}
			}
			if (this.running) {
				pause(this.settings.standbyRetryInterval());
			}
		}
	}

	private void failed(Exception ex) {
		Throwable cause = NestedExceptionUtils.getMostSpecificCause(ex);
		String state = (cause instanceof SQLException sql) ? sql.getSQLState() : null;
		if (ReplicationConnector.OBJECT_IN_USE.equals(state)) {
			// another instance streams the slot: stand by
			this.problem = null;
			if (logger.isDebugEnabled()) {
				logger.debug("Replication slot " + this.settings.slot() + " is streamed by another instance; "
						+ "standing by: " + cause.getMessage());
			}
			return;
		}
		if (!this.running) {
			return;
		}
		String message = String.valueOf(cause.getMessage());
		if (message.contains("invalidated") || message.contains("can no longer get changes")) {
			String problem = "replication slot " + this.settings.slot() + " is invalidated: " + message;
			boolean again = problem.equals(this.problem) && System.nanoTime() - this.problemLoggedAt < ERROR_EVERY;
			this.problem = problem;
			if (again) {
				return;
			}
			this.problemLoggedAt = System.nanoTime();
			logger.error("The outbox relay cannot read replication slot " + this.settings.slot() + ": the server "
					+ "invalidated it (it held more WAL than max_slot_wal_keep_size allows, or was otherwise lost). "
					+ "No event is relayed until the slot is dropped and created again; the events not yet sent are "
					+ "still in the outbox table and are sent from it then (see the README's recovery procedure): "
					+ message);
			return;
		}
		this.problem = cause.getClass().getSimpleName() + ": " + message;
		logger.warn("The outbox relay could not stream replication slot " + this.settings.slot() + "; trying again in "
				+ this.settings.standbyRetryInterval() + ": " + this.problem);
	}

	private void stream(PGReplicationStream stream) throws SQLException {
		// a completion waiting for its transactions' visibility gives up once the relay
		// stops: its rows stay behind the confirmed position and are streamed again
		ReplicationCompletions completions = new ReplicationCompletions(
				(sent, transactions) -> this.delivery.complete(sent, transactions, this::sleepWhileRunning),
				() -> statusIfDue(stream));
		try {
			stream(stream, completions);
		}
		finally {
			try {
				ReplicationDelivery.InFlight inFlight = this.unsettled;
				if (inFlight != null) {
					// failed with a batch in flight: its sends are answered (or given up on)
					// while this instance still holds the slot, so that none of them reaches
					// the broker after the next reader sent the same events again
					this.unsettled = null;
					this.delivery.settle(inFlight);
				}
			}
			finally {
				completions.close();
				this.delivery.close();
			}
		}
	}

	private boolean sleepWhileRunning(Duration duration) {
		if (!this.running) {
			return false;
		}
		try {
			Thread.sleep(duration.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
		return this.running;
	}

	// whether the batch in flight was sent long enough ago that reading on would eat into
	// its send timeout: it is finished before more is read
	private boolean readAheadOver(ReplicationDelivery.@Nullable InFlight inFlight) {
		return inFlight != null && System.nanoTime() - inFlight.startedAt() >= this.readAheadNanos;
	}

	private void stream(PGReplicationStream stream, ReplicationCompletions completions) throws SQLException {
		PgOutputDecoder decoder = new PgOutputDecoder();
		String table = this.settings.table().table();
		List<OutboxRecord> batch = new ArrayList<>();
		// the transactions of the batch's events: their rows are completed once visible
		Set<Integer> transactions = new LinkedHashSet<>();
		int transaction = 0;
		Instant commitTime = Instant.now();
		boolean inTransaction = false;
		long completed = 0;
		long confirmed = 0;
		long busyUntil = System.nanoTime() + BUSY_NANOS;
		long nextParkedPass = System.nanoTime();
		// the batch being sent while the next one is read, and the position it completes
		ReplicationDelivery.InFlight inFlight = null;
		long inFlightPosition = 0;
		// the position of the last batch whose sending finished
		long finished = 0;
		while (this.running) {
			ByteBuffer message = stream.readPending();
			if (message != null) {
				busyUntil = System.nanoTime() + BUSY_NANOS;
				Change change = decoder.decode(message);
				if (change instanceof Begin begin) {
					inTransaction = true;
					commitTime = begin.commitTime();
					transaction = begin.xid();
				}
				else if (change instanceof Insert insert && insert.relation().name().equalsIgnoreCase(table)) {
					OutboxRecord event = readable(insert.values(), commitTime, transaction, stream);
					if (event != null) {
						batch.add(event);
						transactions.add(transaction);
					}
				}
				else if (change instanceof Commit commit) {
					inTransaction = false;
					completed = commit.endLsn();
				}
				// at a commit with nothing in flight (or its answers in), the batch goes now:
				// a steady trickle of commits would otherwise keep the stream from ever
				// running dry, and the batch waiting for it
				boolean sendable = change instanceof Commit && (inFlight == null || inFlight.acknowledged());
				if (batch.size() < this.outbox.batchSize() && !readAheadOver(inFlight) && !sendable) {
					continue;
				}
			}
			if (message == null && inFlight != null && !inFlight.acknowledged()
					&& System.nanoTime() - inFlight.startedAt() < BUSY_NANOS) {
				// a moment without data while a batch is in flight: read on rather than
				// cut a small batch, until its acknowledgments arrive
				idle(true);
				continue;
			}
			if (!batch.isEmpty()) {
				// a full batch, or all the stream had: the one in flight is finished first,
				// then this one is sent while the stream is read on
				if (inFlight != null) {
					if (!finish(stream, completions, inFlight, inFlightPosition)) {
						return;
					}
					finished = inFlightPosition;
				}
				inFlight = this.delivery.start(batch, transactions, (duration) -> keepAlive(stream, duration));
				this.unsettled = inFlight;
				inFlightPosition = completed;
				batch = new ArrayList<>();
				transactions = new LinkedHashSet<>();
				if (message == null) {
					// read on while it is in flight (with data flowing, the position is
					// confirmed below as far as the batches finished)
					continue;
				}
			}
			if (inFlight != null && (message == null || readAheadOver(inFlight))) {
				// nothing more to read and the batch in flight answered (or slow to), or
				// read long enough ahead: it is finished now (its send timeout runs)
				if (!finish(stream, completions, inFlight, inFlightPosition)) {
					return;
				}
				finished = inFlightPosition;
				inFlight = null;
				this.unsettled = null;
			}
			if (!inTransaction && message == null) {
				// idle: every transaction received is done; the server's position follows
				completed = Math.max(completed, stream.getLastReceiveLSN().asLong());
			}
			// no further than the last batch finished while one is in flight
			long confirmable = completions.confirmable((inFlight != null) ? finished : completed);
			if (confirmable > confirmed) {
				LogSequenceNumber position = LogSequenceNumber.valueOf(confirmable);
				stream.setFlushedLSN(position);
				stream.setAppliedLSN(position);
				if (message == null) {
					stream.forceUpdateStatus();
				}
				confirmed = confirmable;
			}
			if (message != null) {
				continue;
			}
			long now = System.nanoTime();
			if (now - nextParkedPass >= 0) {
				if (this.delivery.anyParked()) {
					int tried = this.delivery.deliverParked((duration) -> keepAlive(stream, duration));
					nextParkedPass = System.nanoTime() + ((tried > 0) ? 0 : this.outbox.pollInterval().toNanos());
				}
				else {
					// dead events are re-queued by any instance, and only this one parks
					this.delivery.refreshParked();
					nextParkedPass = now + this.outbox.idlePollInterval().toNanos();
				}
			}
			if (idle(now - busyUntil < 0)) {
				busyUntil = System.nanoTime() + BUSY_NANOS;
			}
		}
		// stopped: what was delivered is confirmed, so that the next reader need not send it again
		if (inFlight != null) {
			if (!finish(stream, completions, inFlight, inFlightPosition)) {
				return;
			}
			finished = inFlightPosition;
			this.unsettled = null;
		}
		completions.awaitAll();
		// with events read and not sent, no further than the last batch finished
		long delivered = !batch.isEmpty() ? finished
				: inTransaction ? completed : Math.max(completed, stream.getLastReceiveLSN().asLong());
		long confirmable = completions.confirmable(delivered);
		if (confirmable > confirmed) {
			stream.setFlushedLSN(LogSequenceNumber.valueOf(confirmable));
			stream.setAppliedLSN(LogSequenceNumber.valueOf(confirmable));
			stream.forceUpdateStatus();
		}
	}

	// sends the rest of a batch in flight until each of its events is acknowledged or
	// parked; false when the relay stopped first
	private boolean finish(PGReplicationStream stream, ReplicationCompletions completions,
			ReplicationDelivery.InFlight inFlight, long position) {
		return this.delivery.finish(inFlight, (duration) -> keepAlive(stream, duration),
				(sent) -> completions.submit(sent, inFlight.transactions(), position));
	}

	// true when woken up by a local commit: its events reach the stream within moments
	private boolean idle(boolean busy) {
		try {
			return this.wakeUps.tryAcquire(busy ? BUSY_POLL_NANOS : IDLE_POLL_NANOS, TimeUnit.NANOSECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			this.running = false;
			return false;
		}
	}

	// waits while nothing is read from the stream (the broker is away, a transaction is not
	// yet visible), answering the server every status interval
	private boolean keepAlive(PGReplicationStream stream, Duration duration) {
		long deadline = System.nanoTime() + duration.toNanos();
		long step = Math.max(1, Math.min(duration.toMillis(), this.settings.statusInterval().toMillis()));
		while (this.running && deadline - System.nanoTime() > 0) {
			try {
				statusIfDue(stream);
				Thread.sleep(Math.min(step, Math.max(1, (deadline - System.nanoTime()) / 1_000_000)));
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return false;
			}
		}
		return this.running;
	}

	// the position stays where it is; the server must not take the connection for dead
	// (wal_sender_timeout) while the relay waits
	private void statusIfDue(PGReplicationStream stream) {
		if (System.nanoTime() - this.lastStatus >= this.settings.statusInterval().toNanos()) {
			try {
				stream.forceUpdateStatus();
			}
			catch (SQLException ex) {
				throw new IllegalStateException("The replication connection failed while the relay waited", ex);
			}
			this.lastStatus = System.nanoTime();
		}
	}

	private void pause(Duration duration) {
		try {
			// only a stop cuts the wait short: a standby must not reconnect on every commit
			this.stops.tryAcquire(duration.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			this.running = false;
		}
	}

	// a row that cannot be read (written by SQL without a value the relay needs, say)
	// dies on its own in the table, as a row the table relay cannot send does
	private @Nullable OutboxRecord readable(Row row, Instant commitTime, int transaction,
			PGReplicationStream stream) {
		try {
			return event(row, commitTime);
		}
		catch (SQLException | RuntimeException ex) {
			Long id;
			try {
				id = row.integer("id");
			}
			catch (SQLException | RuntimeException idUnreadable) {
				id = null;
			}
			if (id == null) {
				throw new IllegalStateException("An outbox row without an id in the replication stream", ex);
			}
			this.delivery.parkUnreadable(id, transaction, "Could not be read from the replication stream: " + ex,
					(duration) -> keepAlive(stream, duration));
			return null;
		}
	}

	/**
	 * Turn an inserted row into an event to send, or {@code null} for a row the stream
	 * does not send: one inserted as anything but a new pending event (such a row is left
	 * to the table's own handling).
	 */
	private static @Nullable OutboxRecord event(Row row, Instant commitTime) throws SQLException {
		if (!"PENDING".equals(row.text("status")) || row.text("last_error") != null) {
			return null;
		}
		String headers = row.text("headers");
		Long attempts = row.integer("attempts");
		return new OutboxRecord(0, required(row.integer("id"), "id"), required(row.uuid("event_id"), "event_id"),
				row.text("aggregate_id"), required(row.text("topic"), "topic"), required(row.bytes("payload"), "payload"),
				(headers != null) ? HeadersJson.parse(headers) : Map.of(), row.text("type"), row.text("aggregate_type"),
				(attempts != null) ? attempts.intValue() : 0, commitTime);
	}

	private static <T> T required(@Nullable T value, String column) {
		if (value == null) {
			throw new IllegalStateException("The outbox row has no " + column);
		}
		return value;
	}

}
