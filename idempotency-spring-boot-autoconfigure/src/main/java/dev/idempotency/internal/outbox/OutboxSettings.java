package dev.idempotency.internal.outbox;

import java.time.Duration;

/**
 * How the relay works.
 *
 * @param batchSize maximum number of events claimed and sent per cycle
 * @param pollInterval how long the relay sleeps when it found fewer events than a batch
 * @param lease how long a claimed batch belongs to this instance
 * @param sendTimeout how long the relay waits for the acknowledgments of a batch
 * @param maxAttempts attempts after which an event is dead
 * @param initialBackoff delay after the first failed attempt
 * @param backoffMultiplier factor between consecutive delays
 * @param maxBackoff longest delay between attempts
 * @param jitter fraction of a delay that is randomized (0 to 1)
 * @param deleteSent whether sent events are deleted (else marked and purged later)
 * @param retention how long marked events are kept
 * @param shutdownTimeout how long stopping waits for the batch in flight
 * @param idlePollInterval longest wait between polls while the outbox stays empty: the
 * wait doubles from {@code pollInterval} up to this
 * @param claimAhead whether the next batch is claimed while a full batch is being sent
 */
public record OutboxSettings(int batchSize, Duration pollInterval, Duration lease, Duration sendTimeout,
		int maxAttempts, Duration initialBackoff, double backoffMultiplier, Duration maxBackoff, double jitter,
		boolean deleteSent, Duration retention, Duration shutdownTimeout, Duration idlePollInterval,
		boolean claimAhead) {
}
