package dev.idempotency.internal.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.idempotency.internal.outbox.OutboxRepository.Failure;
import dev.idempotency.outbox.OutboxMetrics;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.jspecify.annotations.Nullable;

import org.springframework.core.NestedExceptionUtils;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.SendResult;

/**
 * Sends one claimed batch in per-key order. An event is sent only once the previous event
 * of its key in the batch is acknowledged: the events of a batch go out in waves (the
 * first event of every key, then the second of every key that is still sendable, and so
 * on), each wave pipelined. An event that fails holds back the later events of its key,
 * whatever the reason (a record the broker refuses as too large, a serializer error), so
 * that no later event of a key is ever published before an earlier one. Events without a
 * key have no order and go in the first wave.
 * <p>
 * An event whose send timed out is sent alone from then on, until a send of it succeeds:
 * in its own wave, with nothing else of the relay in the producer. A producer batch that the broker refuses as
 * too large ({@code MESSAGE_TOO_LARGE}) is split and sent again by the producer, and Kafka
 * clients before 4.2 split it into the same batch again until the delivery timeout when
 * the topic's {@code max.message.bytes} is below {@code batch.size}: the event that is too
 * large, and every event beside it, would time out on every attempt, none of them ever
 * counted as failed. Alone, the event the broker refuses fails as itself.
 */
final class OutboxBatchSender {

	private static final int MAX_CAUSE_DEPTH = 32;

	// bounds the memory of timed-out sends (a long broker outage times out every batch)
	private static final int MAX_TIMED_OUT = 10_000;

	private final KafkaTemplate<String, byte[]> kafka;

	private final OutboxSettings settings;

	private final OutboxMetrics metrics;

	/** Ids of the events whose send timed out, and none succeeded since. */
	private final Set<Long> timedOut = ConcurrentHashMap.newKeySet();

	OutboxBatchSender(KafkaTemplate<String, byte[]> kafka, OutboxSettings settings, OutboxMetrics metrics) {
		this.kafka = kafka;
		this.settings = settings;
		this.metrics = metrics;
	}

	/**
	 * Send a batch and wait for its acknowledgments, up to the send timeout.
	 * @param batch the events, in id order
	 * @return what happened to each event
	 */
	Outcome send(List<OutboxRecord> batch) {
		return finish(begin(batch));
	}

	/**
	 * Send a batch and wait for its acknowledgments, up to the given deadline.
	 * @param batch the events, in id order
	 * @param deadline the {@link System#nanoTime()} after which no send starts and no
	 * acknowledgment is awaited
	 * @return what happened to each event
	 */
	Outcome send(List<OutboxRecord> batch, long deadline) {
		return finish(begin(batch, deadline));
	}

	/**
	 * Start sending a batch: its first wave (the first event of every key) goes to the
	 * producer, and the send timeout starts. {@link #finish(Sending)} waits for it and
	 * sends the other waves; meanwhile the caller may prepare the next batch, but must
	 * send nothing of it.
	 * @param batch the events, in id order
	 * @return the batch being sent
	 */
	Sending begin(List<OutboxRecord> batch) {
		return begin(batch, System.nanoTime() + this.settings.sendTimeout().toNanos());
	}

	private Sending begin(List<OutboxRecord> batch, long deadline) {
		Sending sending = new Sending(alone(waves(batch), this.timedOut), deadline, new Outcome(batch.size()));
		if (!sending.waves.isEmpty()) {
			dispatch(sending, sending.waves.get(0));
		}
		return sending;
	}

	/**
	 * Wait for a batch's acknowledgments and send the rest of it, wave by wave, up to the
	 * send timeout that started with {@link #begin(List)}.
	 * @param sending the batch
	 * @return what happened to each of its events
	 */
	Outcome finish(Sending sending) {
		for (int wave = 0; wave < sending.waves.size(); wave++) {
			if (wave > 0) {
				dispatch(sending, sending.waves.get(wave));
			}
			acknowledgments(sending);
		}
		return sending.outcome;
	}

	// hands a wave's events to the producer, or fails those that may not be sent
	private void dispatch(Sending sending, List<OutboxRecord> wave) {
		long deadline = sending.deadline;
		Outcome outcome = sending.outcome;
		if (System.nanoTime() - deadline >= 0) {
			// not sent at all: nothing of them is left in the producer to arrive later
			wave.forEach((event) -> outcome.failed.put(event.id(), heldBack("the batch's send timeout passed", null)));
			return;
		}
		for (OutboxRecord event : wave) {
			if (event.key() != null && sending.blockedKeys.contains(event.key())) {
				outcome.failed.put(event.id(), heldBack("an earlier event of its key was not sent", null));
				continue;
			}
			if (System.nanoTime() - deadline >= 0) {
				// the sends before it blocked (no metadata, a full buffer) until the
				// deadline: none starts after it, so the batch ends within its lease
				outcome.failed.put(event.id(), heldBack("the batch's send timeout passed", null));
				block(sending.blockedKeys, event);
				continue;
			}
			if (Thread.currentThread().isInterrupted()) {
				outcome.failed.put(event.id(), heldBack("the relay was stopping", null));
				block(sending.blockedKeys, event);
				continue;
			}
			Throwable topicFailure = sending.failingTopics.get(event.topic());
			if (topicFailure != null) {
				// A send that failed at once (no metadata: broker down, topic missing)
				// blocked for max.block.ms; the other events of its topic would each
				// block as long.
				outcome.failed.put(event.id(), heldBack("an earlier send to " + event.topic() + " failed",
						topicFailure));
				block(sending.blockedKeys, event);
				continue;
			}
			CompletableFuture<SendResult<String, byte[]>> send = send(event);
			if (send.isCompletedExceptionally()) {
				// refused before it reached the producer's queue: nothing was sent beside it
				sending.notQueued.add(event.id());
				if (isTransient(cause(send))) {
					// no metadata for the topic: its other sends would block as long
					sending.failingTopics.put(event.topic(), cause(send));
				}
			}
			sending.inFlight.add(event);
			// the moment of the broker's acknowledgment, for the latency: the relay may
			// look at it later
			sending.sends.add(send.thenApply((result) -> Instant.now()));
		}
	}

	// waits for the acknowledgments of the wave in flight
	private void acknowledgments(Sending sending) {
		Outcome outcome = sending.outcome;
		for (int i = 0; i < sending.inFlight.size(); i++) {
			OutboxRecord event = sending.inFlight.get(i);
			CompletableFuture<Instant> send = sending.sends.get(i);
			Throwable error = await(send, sending.deadline);
			if (!sending.notQueued.contains(event.id())) {
				remember(event, error);
			}
			if (error == null) {
				outcome.sent.add(event.id());
				this.metrics.published(event.topic(), Duration.between(event.createdAt(), send.join()));
			}
			else if (error instanceof InterruptedException) {
				// stopped while waiting (after the shutdown timeout): the broker may have
				// taken the event, so it is sent again, but this was no failed attempt
				outcome.failed.put(event.id(), heldBack("the relay was stopped before its acknowledgment", null));
				block(sending.blockedKeys, event);
			}
			else {
				outcome.failed.put(event.id(), failure(event, error));
				if (isTransient(error) || error instanceof TimeoutException) {
					outcome.transientFailures.add(event.id());
				}
				block(sending.blockedKeys, event);
			}
		}
		sending.inFlight.clear();
		sending.sends.clear();
	}

	/**
	 * Split a batch into waves: the n-th wave holds the n-th event of every key.
	 */
	static List<List<OutboxRecord>> waves(List<OutboxRecord> batch) {
		List<List<OutboxRecord>> waves = new ArrayList<>();
		Map<String, Integer> seen = new HashMap<>();
		for (OutboxRecord event : batch) {
			int wave = (event.key() != null) ? seen.merge(event.key(), 1, Integer::sum) - 1 : 0;
			if (wave == waves.size()) {
				waves.add(new ArrayList<>());
			}
			waves.get(wave).add(event);
		}
		return waves;
	}

	/**
	 * Give each event of the given ids a wave of its own, after the other events of its
	 * wave: each is sent once everything sent before it is answered, and nothing is sent
	 * beside it. Per-key order holds, as the events of one wave have different keys.
	 * @param waves the waves of a batch
	 * @param alone the ids of the events to send alone
	 * @return the waves
	 */
	static List<List<OutboxRecord>> alone(List<List<OutboxRecord>> waves, Set<Long> alone) {
		if (alone.isEmpty()) {
			return waves;
		}
		List<List<OutboxRecord>> result = new ArrayList<>(waves.size());
		for (List<OutboxRecord> wave : waves) {
			List<OutboxRecord> together = new ArrayList<>(wave.size());
			List<OutboxRecord> apart = new ArrayList<>();
			for (OutboxRecord event : wave) {
				(alone.contains(event.id()) ? apart : together).add(event);
			}
			if (!together.isEmpty()) {
				result.add(together);
			}
			apart.forEach((event) -> result.add(List.of(event)));
		}
		return result;
	}

	// remembers an event whose send timed out in the producer (the relay's wait or the
	// producer's delivery timeout), so that it is sent alone from then on, until a send of
	// it succeeds: the event a broker refused alone stays alone at its next attempts
	private void remember(OutboxRecord event, @Nullable Throwable error) {
		if (error == null) {
			this.timedOut.remove(event.id());
		}
		else if (error instanceof TimeoutException || isDeliveryTimeout(error)) {
			if (this.timedOut.size() >= MAX_TIMED_OUT) {
				this.timedOut.clear();
			}
			this.timedOut.add(event.id());
		}
	}

	private static boolean isDeliveryTimeout(@Nullable Throwable ex) {
		Throwable cause = ex;
		for (int depth = 0; cause != null && depth < MAX_CAUSE_DEPTH; depth++) {
			if (cause instanceof org.apache.kafka.common.errors.TimeoutException) {
				return true;
			}
			cause = cause.getCause();
		}
		return false;
	}

	private static void block(Set<String> blockedKeys, OutboxRecord event) {
		if (event.key() != null) {
			blockedKeys.add(event.key());
		}
	}

	private static @Nullable Throwable await(CompletableFuture<?> send, long deadline) {
		try {
			send.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
			return null;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return ex;
		}
		catch (ExecutionException ex) {
			return (ex.getCause() != null) ? ex.getCause() : ex;
		}
		catch (TimeoutException | RuntimeException ex) {
			return ex;
		}
	}

	private static Throwable cause(CompletableFuture<?> failed) {
		try {
			failed.join();
			return new IllegalStateException("not failed");
		}
		catch (CompletionException ex) {
			return (ex.getCause() != null) ? ex.getCause() : ex;
		}
		catch (CancellationException ex) {
			return ex;
		}
	}

	private CompletableFuture<SendResult<String, byte[]>> send(OutboxRecord event) {
		try {
			// built inside the try: a row that did not come from Outbox.publish (written by
			// SQL, a header without a value, say) fails as this event alone, not the batch
			ProducerRecord<String, byte[]> record = new ProducerRecord<>(event.topic(), event.key(), event.payload());
			event.headers().forEach((name, value) -> record.headers().add(name, value.getBytes(StandardCharsets.UTF_8)));
			record.headers()
				.add(OutboxRelay.IDEMPOTENCY_KEY_HEADER, event.eventId().toString().getBytes(StandardCharsets.UTF_8));
			if (event.type() != null) {
				record.headers().add(OutboxRelay.EVENT_TYPE_HEADER, event.type().getBytes(StandardCharsets.UTF_8));
			}
			if (event.aggregateType() != null) {
				record.headers()
					.add(OutboxRelay.AGGREGATE_TYPE_HEADER, event.aggregateType().getBytes(StandardCharsets.UTF_8));
			}
			return this.kafka.send(record);
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(ex);
		}
	}

	/**
	 * Take out of the given events those not to be sent because the Kafka cluster said it
	 * does not have their topic (see {@link TopicCheck}): each fails as an attempt, without
	 * a send, which would block for {@code max.block.ms}; the later events of its key wait
	 * behind it, without an attempt.
	 * @param events the events, in the order they are to be published
	 * @param missing the topics the cluster does not have
	 * @param failures receives why each event taken out is not sent
	 * @return the events to send, in their order
	 */
	List<OutboxRecord> withoutTopics(List<OutboxRecord> events, Set<String> missing, Map<Long, Failure> failures) {
		if (missing.isEmpty()) {
			return events;
		}
		MissingTopicSplit split = MissingTopicSplit.of(events, missing);
		split.missing().forEach((event) -> failures.put(event.id(),
				failure(event, new UnknownTopicOrPartitionException(TopicCheck.reason(event.topic())))));
		split.heldBack().forEach((event) -> failures.put(event.id(),
				heldBack("an earlier event of its key is for a topic that does not exist", null)));
		return split.rest();
	}

	/**
	 * Record an event's failed attempt: the meter, its error and its next backoff.
	 * @param event the event
	 * @param ex why it failed
	 * @return the failure
	 */
	Failure failure(OutboxRecord event, Throwable ex) {
		this.metrics.failed(event.topic(), NestedExceptionUtils.getMostSpecificCause(ex));
		int attempt = event.attempts() + 1;
		double backoff = Math.min(this.settings.maxBackoff().toMillis(),
				this.settings.initialBackoff().toMillis() * Math.pow(this.settings.backoffMultiplier(), attempt - 1));
		// full jitter around the exponential delay: spreads retries of many events
		double jittered = backoff * (1 - this.settings.jitter() * ThreadLocalRandom.current().nextDouble());
		Throwable cause = NestedExceptionUtils.getMostSpecificCause(ex);
		String message = (cause != ex) ? ex.getMessage() + ": " + cause.getClass().getSimpleName() + ": " + cause.getMessage()
				: ex.getClass().getSimpleName() + ": " + ex.getMessage();
		return new Failure(message.length() > 2000 ? message.substring(0, 2000) : message,
				Duration.ofMillis((long) jittered), true);
	}

	/**
	 * Whether a send failed for a reason of the broker or the network (Kafka's retriable
	 * errors, such as no metadata for the topic) rather than of the event.
	 */
	static boolean isTransient(Throwable ex) {
		Throwable cause = ex;
		// bounded: a cause chain may loop
		for (int depth = 0; cause != null && depth < MAX_CAUSE_DEPTH; depth++) {
			if (cause instanceof RetriableException) {
				return true;
			}
			cause = cause.getCause();
		}
		return false;
	}

	private Failure heldBack(String reason, @Nullable Throwable cause) {
		return new Failure("Held back: " + reason + ((cause != null) ? ": " + cause : ""),
				this.settings.initialBackoff(), false);
	}

	/**
	 * A batch being sent: its waves, its deadline, and the wave in flight.
	 */
	static final class Sending {

		final List<List<OutboxRecord>> waves;

		final long deadline;

		final Outcome outcome;

		final Map<String, Throwable> failingTopics = new HashMap<>();

		final Set<String> blockedKeys = new HashSet<>();

		final Set<Long> notQueued = new HashSet<>();

		final List<OutboxRecord> inFlight = new ArrayList<>();

		// each completes with the moment of its acknowledgment
		final List<CompletableFuture<Instant>> sends = new ArrayList<>();

		Sending(List<List<OutboxRecord>> waves, long deadline, Outcome outcome) {
			this.waves = waves;
			this.deadline = deadline;
			this.outcome = outcome;
		}

		/**
		 * Wait for the answers to the wave in flight, up to the deadline, whatever they are.
		 */
		void awaitAnswers() {
			for (CompletableFuture<?> send : this.sends) {
				await(send, this.deadline);
			}
		}

		/**
		 * Return whether every send of the wave in flight has its answer.
		 */
		boolean answered() {
			for (CompletableFuture<?> send : this.sends) {
				if (!send.isDone()) {
					return false;
				}
			}
			return true;
		}

	}

	/**
	 * What happened to the events of a batch.
	 */
	static final class Outcome {

		/** Ids of the events the broker acknowledged. */
		final List<Long> sent;

		/** Why the other events were not sent, by id, in the order they were decided. */
		final Map<Long, Failure> failed = new LinkedHashMap<>();

		/**
		 * Ids of the failed events whose send failed for a reason of the broker or the
		 * network (see {@link OutboxBatchSender#isTransient(Throwable)}), or timed out.
		 */
		final Set<Long> transientFailures = new HashSet<>();

		Outcome(int size) {
			this.sent = new ArrayList<>(size);
		}

	}

}
