package dev.idempotency.internal.outbox;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import dev.idempotency.internal.outbox.OutboxRepository.Failure;
import dev.idempotency.internal.outbox.ReplicationDelivery.Pause;
import dev.idempotency.outbox.OutboxMetrics;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * Sends a claimed batch of outbox events (see {@link OutboxBatchSender}) and records
 * what happened to each event: completes the events sent, and records the failures of
 * the others, which back off or become {@code DEAD}. The events of a topic the Kafka
 * cluster said it does not have ({@link TopicCheck}, asked after sends failed for a reason
 * of the broker) fail as an attempt without a send while it keeps saying so.
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

	private final TopicCheck topics;

	OutboxDelivery(OutboxRepository repository, KafkaTemplate<String, byte[]> kafka, OutboxSettings settings,
			OutboxMetrics metrics, String owner) {
		this.repository = repository;
		this.kafka = kafka;
		this.settings = settings;
		this.metrics = metrics;
		this.sender = new OutboxBatchSender(kafka, settings, metrics);
		this.owner = owner;
		this.topics = TopicCheck.of(kafka, logger);
	}

	/**
	 * Send a claimed batch and record what happened to each event.
	 * @param batch the events, in id order
	 * @param started the {@link System#nanoTime()} at which the claim started
	 * @param claimed the {@link System#nanoTime()} at which the claim ended
	 */
	void deliver(List<OutboxRecord> batch, long started, long claimed) {
		// The questions to the cluster share the send timeout with the sends: the batch
		// ends within it, plus the max.block.ms a send started just before it may take, and
		// is recorded within its lease (at least twice the send timeout), as without them.
		// The events of a topic the cluster said it does not have are not sent: each send
		// would block for max.block.ms, and the batch's other events with it.
		long deadline = System.nanoTime() + this.settings.sendTimeout().toNanos();
		Map<Long, Failure> unsent = new LinkedHashMap<>();
		List<OutboxRecord> sendable = this.sender.withoutTopics(batch, knownMissing(batch, until(deadline)), unsent);
		OutboxBatchSender.Outcome outcome = this.sender.send(sendable, deadline);
		long acknowledged = System.nanoTime();
		boolean sendsFailed = !outcome.failed.isEmpty();
		Map<Long, Failure> failed = new LinkedHashMap<>(unsent);
		failed.putAll(sendsFailed ? whyNotSent(sendable, outcome, deadline) : Map.of());
		List<Long> claims = claims(batch);
		// without failures, the claim is given back with the completion, in one statement;
		// with failures, once they are recorded
		this.repository.complete(outcome.sent, failed.isEmpty() ? claims : List.of(), this.owner,
				this.settings.deleteSent());
		if (!failed.isEmpty()) {
			logger.warn(failed.size() + " of " + batch.size() + " outbox events were not sent and will be "
					+ "retried after their backoff; first error: " + failed.values().iterator().next().error());
		}
		if (sendsFailed && this.kafka.getProducerFactory() instanceof DefaultKafkaProducerFactory<?, ?> producers) {
			// Start the next attempt on a fresh producer, in case this one is in a state it
			// cannot leave (a fatal error, a replaced cluster). Closed before the failures
			// give the events back: a send that timed out here may still be in this
			// producer's queue, and must not reach the broker after the next claimant
			// sent the events behind it.
			producers.reset();
		}
		List<Long> dead = List.of();
		if (!failed.isEmpty()) {
			dead = this.repository.fail(failed, claims, this.owner, this.settings.maxAttempts());
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

	// the topics of the batch that the cluster said it does not have, a second ago or now
	private Set<String> knownMissing(List<OutboxRecord> batch, Pause questions) {
		return this.topics.anyFoundMissing() ? this.topics.foundMissing(TopicCheck.topics(batch), questions) : Set.of();
	}

	// Why the events not sent were not: a send to a missing topic fails as one to an absent
	// broker does (no metadata within max.block.ms), so after such failures the cluster is
	// asked, and its answer that a topic does not exist is said in the events' last error
	// (each failed send counts as an attempt either way).
	private Map<Long, Failure> whyNotSent(List<OutboxRecord> sent, OutboxBatchSender.Outcome outcome, long deadline) {
		Set<String> asked = TopicCheck.transientTopics(sent, outcome);
		// none asked once the send timeout has passed: the next failure asks
		Set<String> missing = (asked.isEmpty() || System.nanoTime() - deadline >= 0) ? Set.of()
				: this.topics.missing(asked, until(deadline));
		if (missing.isEmpty()) {
			return outcome.failed;
		}
		Map<Long, Failure> failed = new LinkedHashMap<>(outcome.failed);
		for (OutboxRecord event : sent) {
			Failure failure = failed.get(event.id());
			if (failure != null && outcome.transientFailures.contains(event.id()) && missing.contains(event.topic())) {
				failed.put(event.id(), new Failure(TopicCheck.reason(event.topic()), failure.delay(), true));
			}
		}
		return failed;
	}

	// waits until the deadline at most; an interrupt (the relay stopping) ends it too
	private static Pause until(long deadline) {
		return (duration) -> {
			long wait = Math.min(duration.toNanos(), deadline - System.nanoTime());
			if (wait <= 0) {
				return false;
			}
			try {
				TimeUnit.NANOSECONDS.sleep(wait);
				return true;
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return false;
			}
		};
	}

	/**
	 * Close the admin client that asks the cluster about topics, if one was opened.
	 */
	void close() {
		this.topics.close();
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
