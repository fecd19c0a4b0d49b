package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;

import dev.idempotency.internal.outbox.OutboxParking.Parked;
import dev.idempotency.internal.outbox.OutboxRepository.Failure;
import dev.idempotency.outbox.OutboxMetrics;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * Sends the events the replication relay read from the stream, and the events parked in
 * the table. A streamed batch is done when each of its events is acknowledged or parked
 * in the table: only then may the slot's position move past it. A send that fails for a
 * reason of the broker or the network is retried without end, with backoff, while the
 * stream is not read (the slot holds the WAL); an event that fails on its own
 * ({@code max-attempts} times) is parked {@code DEAD}, with the later events of its key
 * held back behind it. An event of a topic the cluster says it does not have is parked at
 * once, and its attempts made from the table ({@link TopicCheck}). Sent events are deleted
 * (or marked) in one statement per batch.
 */
final class ReplicationDelivery {

	private static final Log logger = LogFactory.getLog(OutboxReplicationRelay.class);

	private final OutboxRepository repository;

	private final OutboxParking parking;

	private final KafkaTemplate<String, byte[]> kafka;

	private final OutboxSettings settings;

	private final OutboxMetrics metrics;

	private final OutboxBatchSender sender;

	private final TransactionVisibility visibility;

	private final TopicCheck topics;

	private boolean anyParked = true;

	ReplicationDelivery(OutboxRepository repository, OutboxParking parking, KafkaTemplate<String, byte[]> kafka,
			OutboxSettings settings, OutboxMetrics metrics, TransactionVisibility visibility) {
		this.visibility = visibility;
		this.repository = repository;
		this.parking = parking;
		this.kafka = kafka;
		this.settings = settings;
		this.metrics = metrics;
		this.sender = new OutboxBatchSender(kafka, settings, metrics);
		this.topics = TopicCheck.of(kafka, logger);
	}

	/**
	 * Let go of what an active reader holds (the admin client that asks the cluster about
	 * topics); a next active period starts afresh.
	 */
	void close() {
		this.topics.close();
	}

	/**
	 * Read again whether any event is parked, as a new active reader must.
	 */
	void refreshParked() {
		this.anyParked = this.parking.anyParked();
	}

	/**
	 * Return whether any event was parked when last checked, or since.
	 * @return whether one was
	 */
	boolean anyParked() {
		return this.anyParked;
	}

	/**
	 * Start sending a streamed batch: the events whose key has a parked event are parked
	 * behind it, and the first event of every other key goes to the producer. The stream
	 * may be read meanwhile, but nothing more may be sent before {@link #finish}.
	 * @param batch the events, in commit order
	 * @param transactions the transactions the events come from
	 * @param pause waits, keeping the stream alive; answers {@code false} once the relay stops
	 * @return the batch in flight
	 * @throws IllegalStateException if the relay stopped while events were to be parked
	 */
	InFlight start(List<OutboxRecord> batch, Set<Integer> transactions, Pause pause) {
		Set<String> missing = this.topics.anyFoundMissing()
				? this.topics.foundMissing(TopicCheck.topics(batch), pause) : Set.of();
		if ((this.anyParked || !missing.isEmpty()) && !this.visibility.await(transactions, pause)) {
			// events may be parked below: their rows must be visible first
			throw new IllegalStateException("The relay stopped");
		}
		List<OutboxRecord> remaining = parkMissingTopics(holdBackParkedKeys(batch), missing);
		return new InFlight(remaining, transactions, this.sender.begin(remaining));
	}

	/**
	 * Finish sending a batch that {@link #start(List)} started, until each of its events
	 * is acknowledged or parked.
	 * @param batch the batch in flight
	 * @param pause waits between attempts, keeping the stream alive; answers
	 * {@code false} when the relay stops meanwhile
	 * @param completion completes the events acknowledged (see {@link #complete(List, Collection, Pause)}),
	 * given their ids once, whatever happens
	 * @return whether each event is acknowledged or parked; {@code false} when the relay
	 * stopped first (the events not sent are streamed again to the next reader)
	 */
	boolean finish(InFlight batch, Pause pause, Consumer<List<Long>> completion) {
		List<OutboxRecord> remaining = batch.events;
		Map<Long, Integer> attempts = new HashMap<>();
		// the keys whose event this finish parked, and why their later events wait
		Map<String, String> parkedKeys = new HashMap<>();
		List<Long> sent = new ArrayList<>(remaining.size());
		Duration backoff = this.settings.initialBackoff();
		OutboxBatchSender.Sending sending = batch.sending;
		try {
			while (!remaining.isEmpty()) {
				OutboxBatchSender.Outcome outcome = this.sender.finish(sending);
				sent.addAll(outcome.sent);
				if (outcome.failed.isEmpty()) {
					return true;
				}
				resetProducer();
				// a send to a missing topic fails as one to an absent broker: the cluster tells
				Set<String> missing = this.topics.missing(TopicCheck.transientTopics(remaining, outcome), pause);
				List<OutboxRecord> retry = new ArrayList<>();
				Set<String> retryKeys = new HashSet<>();
				Set<String> parkedTopics = new HashSet<>();
				List<Parked> parked = new ArrayList<>();
				for (OutboxRecord event : remaining) {
					Failure failure = outcome.failed.get(event.id());
					if (failure == null) {
						continue;
					}
					String key = event.key();
					if (key != null && parkedKeys.containsKey(key)) {
						parked.add(new Parked(event.id(), "Held back: " + parkedKeys.get(key),
								attempts.getOrDefault(event.id(), 0), false));
						continue;
					}
					boolean ownFailure = failure.attempted() && !outcome.transientFailures.contains(event.id());
					// (not failed for its own reason, and the first of its key still to be
					// sent: an earlier one may wait for a retry)
					boolean topicMissing = !ownFailure && missing.contains(event.topic())
							&& (key == null || !retryKeys.contains(key));
					boolean counts = topicMissing || ownFailure;
					int attempt = attempts.merge(event.id(), counts ? 1 : 0, Integer::sum);
					String error = topicMissing ? TopicCheck.reason(event.topic()) : failure.error();
					if (counts && attempt >= this.settings.maxAttempts()) {
						parked.add(new Parked(event.id(), error, attempt, true));
						if (key != null) {
							parkedKeys.put(key, "an earlier event of its key is DEAD");
						}
					}
					else if (topicMissing) {
						// its attempts go on from the table, after its backoff; the stream, past it
						parked.add(new Parked(event.id(), error, attempt, false, failure.delay()));
						parkedTopics.add(event.topic());
						if (key != null) {
							parkedKeys.put(key, "an earlier event of its key is parked");
						}
					}
					else {
						retry.add(event);
						if (key != null) {
							retryKeys.add(key);
						}
					}
				}
				if (!parkedTopics.isEmpty()) {
					logger.warn("The Kafka cluster has no topic " + String.join(", ", parkedTopics) + ": their outbox "
							+ "events are parked in the table and sent from it once it exists (DEAD after "
							+ this.settings.maxAttempts() + " attempts); the stream goes on with the other events");
				}
				// the rows parked must be visible (the completion of the sent ones waits
				// for it on its own thread)
				if (!parked.isEmpty() && !this.visibility.await(batch.transactions, pause)) {
					return false;
				}
				park(parked);
				if (retry.isEmpty()) {
					return true;
				}
				logger.warn(retry.size() + " outbox events of the replication stream were not sent; sending them "
						+ "again in " + backoff + ", and reading no further meanwhile; first error: "
						+ Objects.requireNonNull(outcome.failed.get(retry.get(0).id())).error());
				if (!pause.await(backoff)) {
					return false;
				}
				backoff = next(backoff);
				remaining = retry;
				sending = this.sender.begin(retry);
			}
			return true;
		}
		finally {
			completion.accept(sent);
		}
	}

	/**
	 * Wait for the answers to a batch's sends in flight (up to its send timeout), after
	 * the stream failed: nothing more of it is sent, and nothing completed.
	 * @param batch the batch in flight
	 */
	void settle(InFlight batch) {
		batch.sending.awaitAnswers();
		if (!batch.acknowledged()) {
			// sends still in the producer past the batch's send timeout: dropped with it,
			// so that none of them reaches the broker after the next reader sent it again
			resetProducer();
		}
	}

	/**
	 * Complete events the broker acknowledged: delete them (or mark them sent), in one
	 * statement, once their transactions are visible. Runs beside the stream's thread, so
	 * that the next batch is sent without waiting for it.
	 * @param sent their ids
	 * @param transactions the transactions they come from
	 * @param pause waits between looks at the transactions' visibility; answers
	 * {@code false} once the relay stops
	 * @throws IllegalStateException if the relay stopped before they were visible (the
	 * rows stay, behind the confirmed position, and are streamed again)
	 */
	void complete(List<Long> sent, Collection<Integer> transactions, Pause pause) {
		if (!this.visibility.await(transactions, pause)) {
			throw new IllegalStateException("The relay stopped before transactions " + transactions
					+ " were visible");
		}
		this.repository.complete(sent, List.of(), "", this.settings.deleteSent());
	}

	/**
	 * Send a batch of the parked events that are due, and record what happened.
	 * @return the number of events tried
	 */
	int deliverParked(Pause pause) {
		List<OutboxRecord> due = this.parking.due();
		if (due.isEmpty()) {
			this.anyParked = this.parking.anyParked();
			return 0;
		}
		// the events of a topic still missing are not sent (the send would block for
		// max.block.ms): each such look counts an attempt
		Map<Long, Failure> failures = new LinkedHashMap<>();
		List<OutboxRecord> sendable = this.sender.withoutTopics(due,
				this.topics.stillMissing(TopicCheck.topics(due), pause), failures);
		OutboxBatchSender.Outcome outcome = this.sender.send(sendable);
		this.repository.complete(outcome.sent, List.of(), "", this.settings.deleteSent());
		if (!outcome.failed.isEmpty()) {
			resetProducer();
			// as for the stream: a broker or network failure is no attempt, no event dies of
			// it, unless the cluster says that the topic does not exist
			Set<String> missing = this.topics.missing(TopicCheck.transientTopics(sendable, outcome), pause);
			for (OutboxRecord event : sendable) {
				Failure failure = outcome.failed.get(event.id());
				if (failure == null) {
					continue;
				}
				if (!outcome.transientFailures.contains(event.id())) {
					failures.put(event.id(), failure);
				}
				else if (missing.contains(event.topic())) {
					failures.put(event.id(), new Failure(TopicCheck.reason(event.topic()), failure.delay(), true));
				}
				else {
					failures.put(event.id(), new Failure(failure.error(), failure.delay(), false));
				}
			}
		}
		if (!failures.isEmpty()) {
			List<Long> dead = this.parking.fail(failures, this.settings.maxAttempts());
			logger.warn(failures.size() + " of " + due.size() + " parked outbox events were not sent; "
					+ (failures.size() - dead.size()) + " will be retried after their backoff; first error: "
					+ failures.values().iterator().next().error());
			if (!dead.isEmpty()) {
				deadReport(dead.size());
			}
		}
		return due.size();
	}

	// the events of a batch already found to be of a missing topic are parked before any
	// send, with the later events of their keys; the others go on
	private List<OutboxRecord> parkMissingTopics(List<OutboxRecord> batch, Set<String> missing) {
		if (missing.isEmpty()) {
			return batch;
		}
		MissingTopicSplit split = MissingTopicSplit.of(batch, missing);
		List<Parked> parked = new ArrayList<>(split.missing().size() + split.heldBack().size());
		split.missing().forEach((event) -> parked.add(new Parked(event.id(), TopicCheck.reason(event.topic()), 0, false)));
		split.heldBack().forEach((event) -> parked
			.add(new Parked(event.id(), "Held back: an earlier event of its key is parked", 0, false)));
		park(parked);
		return split.rest();
	}

	/**
	 * Park an event that could not be read from the stream, as {@code DEAD}.
	 * @param id the event
	 * @param transaction the transaction it comes from
	 * @param error why
	 * @param pause waits, keeping the stream alive; answers {@code false} once the relay stops
	 * @throws IllegalStateException if the relay stopped first
	 */
	void parkUnreadable(long id, int transaction, String error, Pause pause) {
		if (!this.visibility.await(List.of(transaction), pause)) {
			throw new IllegalStateException("The relay stopped");
		}
		logger.warn("Outbox event " + id + " is DEAD: " + error);
		park(List.of(new Parked(id, (error.length() > 2000) ? error.substring(0, 2000) : error, 0, true)));
	}

	// the events whose key has a parked event wait behind it, in the table
	private List<OutboxRecord> holdBackParkedKeys(List<OutboxRecord> batch) {
		if (!this.anyParked) {
			return batch;
		}
		Set<String> keys = new HashSet<>();
		batch.forEach((event) -> {
			if (event.key() != null) {
				keys.add(event.key());
			}
		});
		Set<String> parkedKeys = this.parking.parkedKeys(keys);
		if (parkedKeys.isEmpty()) {
			return batch;
		}
		List<OutboxRecord> remaining = new ArrayList<>(batch.size());
		List<Parked> parked = new ArrayList<>();
		for (OutboxRecord event : batch) {
			if (event.key() != null && parkedKeys.contains(event.key())) {
				parked.add(new Parked(event.id(), "Held back: an earlier event of its key is parked", 0, false));
			}
			else {
				remaining.add(event);
			}
		}
		park(parked);
		return remaining;
	}

	private void park(List<Parked> parked) {
		if (parked.isEmpty()) {
			return;
		}
		this.parking.park(parked);
		this.anyParked = true;
		long dead = parked.stream().filter(Parked::dead).count();
		if (dead > 0) {
			deadReport(dead);
		}
	}

	private void deadReport(long dead) {
		logger.warn(dead + " outbox events reached " + this.settings.maxAttempts() + " attempts and are DEAD; later "
				+ "events of their keys wait in the table until they are re-queued");
		this.metrics.stats(this.repository.stats());
	}

	private Duration next(Duration backoff) {
		Duration next = Duration.ofMillis((long) (backoff.toMillis() * this.settings.backoffMultiplier()));
		return (next.compareTo(this.settings.maxBackoff()) > 0) ? this.settings.maxBackoff() : next;
	}

	// A send that timed out may still be in this producer's queue: it must not reach the
	// broker after the same events sent again, or after the later events of their keys.
	private void resetProducer() {
		if (this.kafka.getProducerFactory() instanceof DefaultKafkaProducerFactory<?, ?> producers) {
			producers.reset();
		}
	}

	/**
	 * A streamed batch whose sending started.
	 */
	static final class InFlight {

		private final List<OutboxRecord> events;

		private final Set<Integer> transactions;

		private final OutboxBatchSender.Sending sending;

		private final long startedAt = System.nanoTime();

		private InFlight(List<OutboxRecord> events, Set<Integer> transactions,
				OutboxBatchSender.Sending sending) {
			this.events = events;
			this.transactions = transactions;
			this.sending = sending;
		}

		/**
		 * Return whether the broker answered every send started so far.
		 */
		boolean acknowledged() {
			return this.sending.answered();
		}

		/**
		 * Return the transactions the batch's events come from.
		 */
		Set<Integer> transactions() {
			return this.transactions;
		}

		/**
		 * Return when the sending started, in {@link System#nanoTime()}.
		 */
		long startedAt() {
			return this.startedAt;
		}

	}

	/**
	 * Waits between attempts.
	 */
	@FunctionalInterface
	interface Pause {

		/**
		 * Wait, keeping the stream alive.
		 * @param duration how long
		 * @return {@code false} when the relay stops meanwhile
		 */
		boolean await(Duration duration);

	}

}
