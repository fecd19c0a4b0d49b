package dev.idempotency.internal.outbox;

import java.util.List;
import java.util.UUID;

import dev.idempotency.outbox.OutboxMetrics;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * Publishes outbox events to Kafka. Each cycle claims a batch of due events in a short
 * transaction (with a lease), sends them asynchronously outside any transaction (an event
 * only after the previous event of its key in the batch was acknowledged; see
 * {@link OutboxBatchSender}), and records the outcome in one statement per outcome.
 * A commit that wrote events wakes the relay at once; polling finds the events of other
 * instances, less and less often while the outbox stays empty (see {@link PollBackoff}).
 * Failed sends back off exponentially with jitter; after the last attempt an event is
 * {@code DEAD} and blocks the later events of its key until it is re-queued.
 * <p>
 * The cycles run in an {@link OutboxRelayLoop}; each claimed batch is delivered by an
 * {@link OutboxDelivery}.
 * <p>
 * A {@link SmartLifecycle}: it starts with the application context unless
 * {@link #setAutoStartup(boolean) auto-startup} is off, and can be stopped and started
 * again.
 */
public final class OutboxRelay implements SmartLifecycle {

	/** Header that carries the event id. */
	public static final String IDEMPOTENCY_KEY_HEADER = "X-Idempotency-Key";

	/** Header that carries the event type, when set. */
	public static final String EVENT_TYPE_HEADER = "X-Event-Type";

	/** Header that carries the aggregate type, when set. */
	public static final String AGGREGATE_TYPE_HEADER = "X-Aggregate-Type";

	private static final Log logger = LogFactory.getLog(OutboxRelay.class);

	private final OutboxRepository repository;

	private final KafkaTemplate<String, byte[]> kafka;

	private final OutboxSettings settings;

	private final OutboxDelivery delivery;

	private final OutboxRelayLoop loop;

	private final String owner = UUID.randomUUID().toString();

	private boolean autoStartup = true;

	private @Nullable Thread thread;

	/**
	 * Create a relay.
	 * @param repository the outbox table
	 * @param kafka the template that sends (an idempotent producer)
	 * @param settings the relay's settings
	 * @param metrics records what the relay does
	 */
	public OutboxRelay(OutboxRepository repository, KafkaTemplate<String, byte[]> kafka, OutboxSettings settings,
			OutboxMetrics metrics) {
		this.repository = repository;
		this.kafka = kafka;
		this.settings = settings;
		this.delivery = new OutboxDelivery(repository, kafka, settings, metrics, this.owner);
		this.loop = new OutboxRelayLoop(repository, kafka, settings, metrics, this.delivery, this.owner);
	}

	/**
	 * Set whether the relay starts with the application context. When not, the bean
	 * exists and {@link #start()} starts it later.
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
	 * Wake the relay up: events were committed.
	 */
	public void wakeUp() {
		this.loop.wakeUp();
	}

	/**
	 * Run one cycle now: claim, send, record. For tests and tools; the relay's own thread
	 * does this continuously while it runs.
	 * @return the number of events claimed
	 */
	public int relayOnce() {
		long started = System.nanoTime();
		List<OutboxRecord> batch = this.repository.claim(this.owner, this.settings.lease());
		if (!batch.isEmpty()) {
			this.delivery.deliver(batch, started, System.nanoTime());
		}
		return batch.size();
	}

	@Override
	public synchronized void start() {
		if (this.loop.isRunning()) {
			return;
		}
		this.loop.setRunning(true);
		Thread relay = new Thread(this.loop, "idempotency-outbox-relay");
		relay.setDaemon(true);
		relay.start();
		this.thread = relay;
	}

	/**
	 * Stop after the batch in flight: its acknowledgments are awaited (up to the shutdown
	 * timeout) and recorded; whatever is still leased is released for other instances.
	 */
	@Override
	public synchronized void stop() {
		this.loop.setRunning(false);
		wakeUp();
		Thread relay = this.thread;
		if (relay != null) {
			try {
				relay.join(this.settings.shutdownTimeout().toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			if (relay.isAlive()) {
				relay.interrupt();
				try {
					relay.join(this.settings.shutdownTimeout().toMillis());
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
			this.thread = null;
			if (relay.isAlive()) {
				// still recording its batch: leave its leases to expire rather than release
				// them under it, which would let its events be sent twice
				logger.warn("The outbox relay did not stop within " + this.settings.shutdownTimeout()
						+ "; its leases expire after " + this.settings.lease());
				return;
			}
		}
		try {
			this.repository.release(this.owner);
		}
		catch (RuntimeException ex) {
			logger.warn("Could not release the outbox relay's leases; they expire after " + this.settings.lease()
					+ ": " + ex);
		}
		this.delivery.close();
		if (this.kafka.getProducerFactory() instanceof DefaultKafkaProducerFactory<?, ?> producers) {
			producers.destroy();
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

}
