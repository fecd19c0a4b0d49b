package dev.idempotency.internal.outbox;

import java.util.List;

import dev.idempotency.outbox.OutboxMetrics;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * Sends a claimed batch of outbox events (see {@link OutboxBatchSender}) and records
 * what happened to each event: completes the events sent, and records the failures of
 * the others, which back off or become {@code DEAD}.
 */
final class OutboxDelivery {

	// the relay's log category, which applications already configure
	private static final Log logger = LogFactory.getLog(OutboxRelay.class);

	private final OutboxRepository repository;

	private final KafkaTemplate<String, byte[]> kafka;

	private final OutboxSettings settings;

	private final OutboxMetrics metrics;

	private final OutboxBatchSender sender;

	private final String owner;

	OutboxDelivery(OutboxRepository repository, KafkaTemplate<String, byte[]> kafka, OutboxSettings settings,
			OutboxMetrics metrics, String owner) {
		this.repository = repository;
		this.kafka = kafka;
		this.settings = settings;
		this.metrics = metrics;
		this.sender = new OutboxBatchSender(kafka, settings, metrics);
		this.owner = owner;
	}

	/**
	 * Send a claimed batch and record what happened to each event.
	 * @param batch the events, in id order
	 * @param started the {@link System#nanoTime()} at which the claim started
	 * @param claimed the {@link System#nanoTime()} at which the claim ended
	 */
	void deliver(List<OutboxRecord> batch, long started, long claimed) {
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
	 * Return the claims that took the events of a batch.
	 * @param batch the events
	 * @return their claims, each once
	 */
	static List<Long> claims(List<OutboxRecord> batch) {
		return batch.stream().map(OutboxRecord::claim).distinct().toList();
	}

}
