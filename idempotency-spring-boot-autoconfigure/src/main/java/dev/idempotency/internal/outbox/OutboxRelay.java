package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

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

	private static final int SKIPPED_CYCLES_AFTER_EMPTY_CLAIM_AHEAD = 8;

	private final OutboxRepository repository;

	private final KafkaTemplate<String, byte[]> kafka;

	private final OutboxSettings settings;

	private final OutboxMetrics metrics;

	private final OutboxBatchSender sender;

	private final String owner = UUID.randomUUID().toString();

	private final Semaphore wakeUps = new Semaphore(0);


	private volatile boolean running;

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
		this.metrics = metrics;
		this.sender = new OutboxBatchSender(kafka, settings, metrics);
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
		if (this.wakeUps.availablePermits() == 0) {
			this.wakeUps.release();
		}
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
			relay(batch, started, System.nanoTime());
		}
		return batch.size();
	}

	/**
	 * Send a claimed batch and record what happened to each event.
	 */
	private void relay(List<OutboxRecord> batch, long started, long claimed) {
		OutboxBatchSender.Outcome outcome = this.sender.send(batch);
		long acknowledged = System.nanoTime();
		List<Long> claims = claims(batch);
		// without failures, the claim is given back with the completion, in one statement;
		// with failures, once they are recorded
		this.repository.complete(outcome.sent, outcome.failed.isEmpty() ? claims : List.of(), this.owner,
				this.settings.deleteSent());
		if (!outcome.failed.isEmpty()) {
			logger.warn(outcome.failed.size() + " of " + batch.size() + " outbox events were not sent and will be "
					+ "retried after their backoff; first error: " + outcome.failed.values().iterator().next().error());
			// Start the next attempt on a fresh producer, in case this one is in a state it
			// cannot leave (a fatal error, a replaced cluster). Closed before the failures
			// give the events back: a send that timed out here may still be in this
			// producer's queue, and must not reach the broker after the next claimant
			// sent the events behind it.
			if (this.kafka.getProducerFactory() instanceof DefaultKafkaProducerFactory<?, ?> producers) {
				producers.reset();
			}
		}
		List<Long> dead = List.of();
		if (!outcome.failed.isEmpty()) {
			dead = this.repository.fail(outcome.failed, claims, this.owner, this.settings.maxAttempts());
		}
		if (logger.isDebugEnabled()) {
			long done = System.nanoTime();
			logger.debug(String.format("Relayed %d of %d events: claim %.1f ms, send and acknowledgments %.1f ms, "
					+ "completion %.1f ms", outcome.sent.size(), batch.size(), (claimed - started) / 1e6,
					(acknowledged - claimed) / 1e6, (done - acknowledged) / 1e6));
		}
		if (!dead.isEmpty()) {
			logger.warn(dead.size() + " outbox events reached " + this.settings.maxAttempts()
					+ " attempts and are DEAD; later events of their keys wait until they are re-queued");
			this.metrics.stats(this.repository.stats());
		}
	}

	/**
	 * Relay until stopped. While a full batch is being sent, the next one is claimed on the
	 * claimer thread, so that the claim's time hides behind the sending. This keeps per-key
	 * order: the claim never takes an event that has an older event of its key leased,
	 * so the batch claimed ahead holds no key of the batch in flight. A batch claimed
	 * ahead is sent only while it still has as much lease left as a fresh claim is
	 * required to have (twice the send timeout); otherwise, and after any failure of the
	 * cycle, its leases are given back.
	 */
	private void loop() {
		PollBackoff backoff = new PollBackoff(this.settings.pollInterval(), this.settings.idlePollInterval());
		ExecutorService claimer = Executors.newSingleThreadExecutor((task) -> {
			Thread thread = new Thread(task, "idempotency-outbox-claimer");
			thread.setDaemon(true);
			return thread;
		});
		// every 10 s, on a thread of its own: the statistics read the whole table, which
		// must not hold up the relay's next batch
		ScheduledExecutorService housekeeper = Executors.newSingleThreadScheduledExecutor((task) -> {
			Thread thread = new Thread(task, "idempotency-outbox-housekeeping");
			thread.setDaemon(true);
			return thread;
		});
		housekeeper.scheduleWithFixedDelay(this::housekeeping, 0, 10, TimeUnit.SECONDS);
		ClaimedAhead ahead = null;
		int cyclesWithoutClaimAhead = 0;
		try {
			while (this.running) {
				int claimed = 0;
				boolean wasClaimedAhead = false;
				try {
					long started = System.nanoTime();
					List<OutboxRecord> batch = List.of();
					if (ahead != null) {
						ClaimedAhead taken = ahead;
						ahead = null;
						batch = taken.take();
						if (batch.isEmpty()) {
							// every claimable event had a key in flight (few keys): claiming
							// ahead only costs a claim, so leave it for a while
							cyclesWithoutClaimAhead = SKIPPED_CYCLES_AFTER_EMPTY_CLAIM_AHEAD;
						}
						else if (!hasLeaseLeft(taken)) {
							logger.warn("A batch claimed ahead waited " + Duration.ofNanos(System.nanoTime()
									- taken.startedAt) + " to be sent; its leases are given back");
							releaseQuietly(batch);
							batch = List.of();
						}
					}
					wasClaimedAhead = !batch.isEmpty();
					if (!wasClaimedAhead) {
						batch = this.repository.claim(this.owner, this.settings.lease());
					}
					long claimedAt = System.nanoTime();
					claimed = batch.size();
					if (claimed > 0) {
						if (claimed >= this.settings.batchSize() && this.running && claimAheadAllowed()) {
							if (cyclesWithoutClaimAhead > 0) {
								cyclesWithoutClaimAhead--;
							}
							else {
								long handedOver = System.nanoTime();
								ahead = new ClaimedAhead(handedOver,
										CompletableFuture.supplyAsync(this::claimAhead, claimer));
							}
						}
						relay(batch, started, claimedAt);
					}
					recordOldestPending();
				}
				catch (RuntimeException ex) {
					logger.warn("Outbox relay cycle failed; retrying in " + this.settings.pollInterval() + ": " + ex);
					if (ahead != null) {
						releaseQuietly(ahead.awaitQuietly());
						ahead = null;
					}
				}
				// a batch claimed ahead, while keys were in flight, says nothing of what is
				// claimable now: claim again at once
				if (claimed >= this.settings.batchSize() || wasClaimedAhead) {
					continue;
				}
				if (this.wakeUps.tryAcquire(backoff.next(claimed), TimeUnit.MILLISECONDS)) {
					backoff.wokenUp();
				}
				this.wakeUps.drainPermits();
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		catch (Error ex) {
			// not a failure of a cycle (those are caught above): the thread ends, and the
			// relay must not look alive while it publishes nothing
			logger.error("The outbox relay stopped on an error; no event is published until it is started again", ex);
			try {
				// its claims, so that other instances need not wait for their leases: once
				// the batch claimed ahead (never sent) has its claim, and once the producer is
				// closed, so that no send of the batch it was in the middle of reaches the
				// broker after another instance sent later events of its keys
				if (ahead != null) {
					ahead.awaitQuietly();
					ahead = null;
				}
				if (this.kafka.getProducerFactory() instanceof DefaultKafkaProducerFactory<?, ?> producers) {
					producers.reset();
				}
				this.repository.release(this.owner);
			}
			catch (RuntimeException releaseFailure) {
				logger.warn("Could not release the outbox relay's leases; they expire after " + this.settings.lease()
						+ ": " + releaseFailure);
			}
			finally {
				// only now: a start() meanwhile would have run a new loop whose claims the
				// release above would give back under it
				this.running = false;
			}
		}
		finally {
			if (ahead != null) {
				// never sent: stop() releases its leases once this thread has ended
				ahead.awaitQuietly();
			}
			claimer.shutdown();
			housekeeper.shutdown();
		}
	}

	private List<OutboxRecord> claimAhead() {
		return this.repository.claim(this.owner, this.settings.lease());
	}

	// a batch claimed ahead must still have the lease a fresh claim has at least
	private boolean claimAheadAllowed() {
		return this.settings.claimAhead()
				&& this.settings.lease().compareTo(this.settings.sendTimeout().multipliedBy(2)) > 0;
	}

	private boolean hasLeaseLeft(ClaimedAhead ahead) {
		long held = System.nanoTime() - ahead.startedAt;
		return held < this.settings.lease().minus(this.settings.sendTimeout().multipliedBy(2)).toNanos();
	}

	private static List<Long> claims(List<OutboxRecord> batch) {
		return batch.stream().map(OutboxRecord::claim).distinct().toList();
	}

	private void releaseQuietly(List<OutboxRecord> batch) {
		if (batch.isEmpty()) {
			return;
		}
		try {
			this.repository.release(claims(batch), this.owner);
		}
		catch (RuntimeException ex) {
			logger.warn("Could not give back the leases of a batch claimed ahead; they expire after "
					+ this.settings.lease() + ": " + ex);
		}
	}

	/**
	 * Read the age of the oldest pending event after every cycle (at least every poll
	 * interval), so that the gauge follows the events that leave: one indexed row.
	 */
	private void recordOldestPending() {
		if (this.metrics != OutboxMetrics.NONE) {
			this.metrics.oldestPending(this.repository.oldestPendingAge());
		}
	}

	private void housekeeping() {
		try {
			this.metrics.stats(this.repository.stats());
			if (!this.settings.deleteSent()) {
				this.repository.purgeSent(this.settings.retention());
			}
			this.repository.purgeExpiredClaims(this.settings.lease().multipliedBy(10));
		}
		catch (RuntimeException ex) {
			// a failed run must not cancel the next ones
			logger.warn("Outbox statistics or purge failed; trying again in 10 seconds: " + ex);
		}
	}

	@Override
	public synchronized void start() {
		if (this.running) {
			return;
		}
		this.running = true;
		Thread relay = new Thread(this::loop, "idempotency-outbox-relay");
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
		this.running = false;
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
		if (this.kafka.getProducerFactory() instanceof DefaultKafkaProducerFactory<?, ?> producers) {
			producers.destroy();
		}
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	@Override
	public int getPhase() {
		// stop before the Kafka producer and the DataSource go away
		return SmartLifecycle.DEFAULT_PHASE - 1024;
	}

	/**
	 * A claim running (or done) on the claimer thread while a batch is being sent.
	 */
	private static final class ClaimedAhead {

		private final CompletableFuture<List<OutboxRecord>> claim;

		// when the claim was handed to the claimer thread, so before its transaction
		// set the leases
		private final long startedAt;

		ClaimedAhead(long startedAt, CompletableFuture<List<OutboxRecord>> claim) {
			this.startedAt = startedAt;
			this.claim = claim;
		}

		List<OutboxRecord> take() {
			try {
				return this.claim.join();
			}
			catch (CompletionException ex) {
				throw (ex.getCause() instanceof RuntimeException cause) ? cause : ex;
			}
		}

		/**
		 * Wait for the claim.
		 * @return what it claimed, or nothing if it failed (a failed claim leased nothing)
		 */
		List<OutboxRecord> awaitQuietly() {
			try {
				return this.claim.join();
			}
			catch (RuntimeException ex) {
				return List.of();
			}
		}

	}

}
