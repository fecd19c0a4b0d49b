package dev.idempotency.internal.consumer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.BiPredicate;

import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.InboundMessage;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.key.StoredKey;
import dev.idempotency.internal.store.JdbcProcessedKeyLookup;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.metrics.Outcome;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.Nullable;

/**
 * Answers a record listener's cache lookups from one pipelined lookup of all keys of the
 * current poll, instead of one round trip per record; without a cache, looks the keys of
 * the poll up in the store's table in one statement, so that duplicates skip their
 * transaction.
 * <p>
 * At the first lookup of a poll, the keys of all its records are resolved (from the raw
 * record values) and looked up together. A later lookup uses that answer only when the
 * record's own key, resolved as usual, is the one that was looked up; otherwise it asks
 * the cache itself. Answers can only be stale in the safe direction: a key that was
 * processed stays processed, and a key seen as new goes to the store, which decides.
 */
final class PollPrefetch {

	private static final ThreadLocal<PollPrefetch> CURRENT = new ThreadLocal<>();

	private final ConsumerRecords<?, ?> records;

	private @Nullable Map<Coordinates, Answer> answers;

	private @Nullable String scope;

	// duplicates skipped before their listener was invoked, counted once the poll is done
	private final List<Skipped> skipped = new ArrayList<>(1);

	private @Nullable Coordinates last;

	private PollPrefetch(ConsumerRecords<?, ?> records) {
		this.records = records;
	}

	static void bind(ConsumerRecords<?, ?> records) {
		PollPrefetch previous = CURRENT.get();
		if (previous != null) {
			// a poll whose last record was not delivered (a seek, a stop) counts its skips now
			previous.countSkipped();
		}
		CURRENT.set(new PollPrefetch(records));
		PollLookupGate.current().polled(records);
	}

	/**
	 * Note a duplicate skipped before its listener was invoked; the skips of a poll are
	 * counted together, when its last record has been seen.
	 * @param metrics the listener's meters
	 * @param source where the key was found processed
	 * @param record the record
	 */
	static void skipped(ListenerMetrics metrics, DecisionSource source, ConsumerRecord<?, ?> record) {
		PollPrefetch poll = CURRENT.get();
		if (poll == null) {
			metrics.message(Outcome.DUPLICATE, source);
			return;
		}
		poll.skip(metrics, source);
		poll.seen(record);
	}

	/**
	 * Note a record on its way to its listener: after the poll's last record, the poll's
	 * skips are counted.
	 * @param record the record
	 */
	static void delivered(ConsumerRecord<?, ?> record) {
		PollPrefetch poll = CURRENT.get();
		if (poll != null && !poll.skipped.isEmpty()) {
			poll.seen(record);
		}
	}

	private void skip(ListenerMetrics metrics, DecisionSource source) {
		for (Skipped entry : this.skipped) {
			if (entry.metrics == metrics && entry.source == source) {
				entry.count++;
				return;
			}
		}
		this.skipped.add(new Skipped(metrics, source));
	}

	private void seen(ConsumerRecord<?, ?> record) {
		Coordinates last = this.last;
		if (last == null) {
			ConsumerRecord<?, ?> lastRecord = null;
			for (ConsumerRecord<?, ?> polled : this.records) {
				lastRecord = polled;
			}
			if (lastRecord == null) {
				return;
			}
			last = new Coordinates(lastRecord.topic(), lastRecord.partition(), lastRecord.offset());
			this.last = last;
		}
		if (record.offset() == last.offset() && record.partition() == last.partition()
				&& record.topic().equals(last.topic())) {
			countSkipped();
		}
	}

	private void countSkipped() {
		for (Skipped entry : this.skipped) {
			entry.metrics.messages(Outcome.DUPLICATE, entry.source, entry.count);
		}
		this.skipped.clear();
	}

	/**
	 * Note that a claim found a duplicate that no lookup had found: later polls are
	 * looked up again.
	 */
	static void duplicateClaimed() {
		PollLookupGate.current().duplicateClaimed();
	}

	/**
	 * Return whether the cache knows the record's key, from the poll's prefetched answers
	 * when there are some for this key, else from one lookup.
	 */
	static boolean isProcessed(ProcessedKeyCache cache, IdempotencyKeyResolver resolver, ListenerMethod method,
			ConsumerRecord<?, ?> record, String scope, String key) {
		return isProcessed(cache::areProcessed, cache::isProcessed, resolver, method, record, scope, key);
	}

	/**
	 * Return whether the store holds the record's key, from one lookup of the whole poll.
	 * A poll of one record is not looked up: its claim answers as fast. Nor is a poll
	 * while the {@link PollLookupGate} is closed: recent polls found nothing.
	 */
	static boolean isProcessed(JdbcProcessedKeyLookup store, IdempotencyKeyResolver resolver, ListenerMethod method,
			ConsumerRecord<?, ?> record, String scope, String key) {
		PollLookupGate gate = PollLookupGate.current();
		PollPrefetch poll = CURRENT.get();
		if (!gate.isOpen() && (poll == null || poll.answers == null)) {
			// not even the keys of the poll are resolved for a lookup that will not run
			return false;
		}
		return isProcessed((s, keys) -> {
			boolean[] processed = store.areProcessed(s, keys);
			gate.lookedUp(anyTrue(processed));
			return processed;
		}, (s, k) -> false, resolver, method, record, scope, key);
	}

	private static boolean anyTrue(boolean[] values) {
		for (boolean value : values) {
			if (value) {
				return true;
			}
		}
		return false;
	}

	private static boolean isProcessed(BiFunction<String, List<String>, boolean[]> lookupAll,
			BiPredicate<String, String> lookupOne, IdempotencyKeyResolver resolver, ListenerMethod method,
			ConsumerRecord<?, ?> record, String scope, String key) {
		PollPrefetch poll = CURRENT.get();
		if (poll == null || poll.records.count() < 2) {
			return lookupOne.test(scope, key);
		}
		if (poll.answers == null) {
			poll.answers = poll.prefetch(lookupAll, resolver, method, scope);
			poll.scope = scope;
		}
		if (!scope.equals(poll.scope)) {
			// another handler of the same container, with a scope of its own
			return lookupOne.test(scope, key);
		}
		Answer answer = poll.answers.get(new Coordinates(record.topic(), record.partition(), record.offset()));
		if (answer != null && answer.key().equals(key)) {
			return answer.processed();
		}
		return lookupOne.test(scope, key);
	}

	private Map<Coordinates, Answer> prefetch(BiFunction<String, List<String>, boolean[]> lookupAll,
			IdempotencyKeyResolver resolver,
			ListenerMethod method, String scope) {
		List<Coordinates> coordinates = new ArrayList<>(this.records.count());
		List<String> keys = new ArrayList<>(this.records.count());
		for (ConsumerRecord<?, ?> record : this.records) {
			String key;
			try {
				key = resolver.resolve(new InboundMessage(record, record.value(), method.method(), method.idempotent()));
			}
			catch (RuntimeException ex) {
				// a key expression over the converted payload may not apply to the raw
				// value: that record is looked up on its own
				continue;
			}
			if (key != null && !key.isBlank()) {
				coordinates.add(new Coordinates(record.topic(), record.partition(), record.offset()));
				keys.add(StoredKey.of(key));
			}
		}
		Map<Coordinates, Answer> answers = new HashMap<>();
		if (keys.isEmpty()) {
			return answers;
		}
		boolean[] processed = lookupAll.apply(scope, keys);
		for (int i = 0; i < processed.length; i++) {
			answers.put(coordinates.get(i), new Answer(keys.get(i), processed[i]));
		}
		return answers;
	}

	private record Coordinates(String topic, int partition, long offset) {
	}

	private record Answer(String key, boolean processed) {
	}

	private static final class Skipped {

		private final ListenerMetrics metrics;

		private final DecisionSource source;

		private int count = 1;

		Skipped(ListenerMetrics metrics, DecisionSource source) {
			this.metrics = metrics;
			this.source = source;
		}

	}

}
