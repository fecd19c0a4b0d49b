package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import dev.idempotency.outbox.OutboxMetrics;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * The polling loop of the {@link OutboxRelay}, run on the relay's thread while the relay
 * runs: claims a batch (the next one ahead while a full batch is being sent), delivers it
 * (see {@link OutboxDelivery}), and waits for the next poll or a wake-up (see
 * {@link PollBackoff}). Housekeeping (statistics, purges) runs beside it.
 */
final class OutboxRelayLoop implements Runnable {

	// the relay's log category, which applications already configure
	private static final Log logger = LogFactory.getLog(OutboxRelay.class);

	private static final int SKIPPED_CYCLES_AFTER_EMPTY_CLAIM_AHEAD = 8;

	private final OutboxRepository repository;

	private final KafkaTemplate<String, byte[]> kafka;

	private final OutboxSettings settings;

	private final OutboxMetrics metrics;

	private final OutboxDelivery delivery;

	private final String owner;

	private final Semaphore wakeUps = new Semaphore(0);

	private volatile boolean running;

	OutboxRelayLoop(OutboxRepository repository, KafkaTemplate<String, byte[]> kafka, OutboxSettings settings,
			OutboxMetrics metrics, OutboxDelivery delivery, String owner) {
		this.repository = repository;
		this.kafka = kafka;
		this.settings = settings;
		this.metrics = metrics;
		this.delivery = delivery;
		this.owner = owner;
	}

	/**
	 * Return whether the loop runs, or is to run once its thread starts.
	 * @return whether the loop runs
	 */
	boolean isRunning() {
		return this.running;
	}

	/**
	 * Set whether the loop is to run: the loop ends after its cycle in flight once this
	 * is {@code false}.
	 * @param running whether the loop is to run
	 */
	void setRunning(boolean running) {
		this.running = running;
	}

	/**
	 * Wake the loop up: events were committed.
	 */
	void wakeUp() {
		if (this.wakeUps.availablePermits() == 0) {
			this.wakeUps.release();
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
	@Override
	public void run() {
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
									- taken.startedAt()) + " to be sent; its leases are given back");
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
						this.delivery.deliver(batch, started, claimedAt);
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
		long held = System.nanoTime() - ahead.startedAt();
		return held < this.settings.lease().minus(this.settings.sendTimeout().multipliedBy(2)).toNanos();
	}

	private void releaseQuietly(List<OutboxRecord> batch) {
		if (batch.isEmpty()) {
			return;
		}
		try {
			this.repository.release(OutboxDelivery.claims(batch), this.owner);
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

}
