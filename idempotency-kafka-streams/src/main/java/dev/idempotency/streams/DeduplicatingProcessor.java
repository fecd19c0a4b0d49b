package dev.idempotency.streams;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.function.LongSupplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.Cancellable;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.jspecify.annotations.Nullable;

/**
 * Forwards the first record of a key within the window, drops the others. The store maps
 * each key to the timestamp of the record that was forwarded for it.
 */
final class DeduplicatingProcessor<K, V> implements FixedKeyProcessor<K, V, V> {

	private static final Log logger = LogFactory.getLog(DeduplicatingProcessor.class);

	private static final int PURGE_BATCH = 10_000;

	// a slice of a purge deletes the expired keys it has read in batches of this many
	private static final int DELETE_BATCH = 128;

	// how often the slices of a purge under way run (wall clock): with slices of at most
	// 10 ms, a purge under way takes at most a fifth of the stream thread
	static final Duration PURGE_SLICE_INTERVAL = Duration.ofMillis(50);

	private final Deduplication.Settings<K, V> settings;

	private final DeduplicationMeters meters;

	private @Nullable FixedKeyProcessorContext<K, V> context;

	private @Nullable KeyValueStore<String, Long> store;

	private TaskFilters.@Nullable Shared filter;

	// the purge under way, read in slices: the key the next slice starts from
	private @Nullable String purgeFrom;

	private boolean purging;

	// whether the purge under way also builds the task's next Bloom filter
	private boolean buildingFilter;

	// No key this processor stored, nor any key its last complete purge kept, is older
	// than this: while the purge's cutoff is not past it, nothing can have expired, and a
	// purge need not read the store. Unknown (the minimum) until a purge has read the
	// store, which may hold keys restored from the changelog. The processors of a task
	// share its store, and each purges all of it: each key is watched by the processor
	// that stored it.
	private long oldestStored = Long.MIN_VALUE;

	// the oldest timestamp of the keys the purge under way kept or saw stored
	private long oldestKept = Long.MAX_VALUE;

	private @Nullable Cancellable slices;

	DeduplicatingProcessor(Deduplication.Settings<K, V> settings) {
		this.settings = settings;
		this.meters = new DeduplicationMeters(settings.meterRegistry(), settings.name());
	}

	@Override
	public void init(FixedKeyProcessorContext<K, V> context) {
		this.context = context;
		this.store = context.getStateStore(this.settings.storeName());
		TaskFilters filters = this.settings.taskFilters();
		if (filters != null) {
			this.filter = filters.acquire(context.taskId());
		}
		// init() runs again on the same instance when Kafka Streams revives a task
		stopSlices();
		this.oldestStored = Long.MIN_VALUE;
		if (!store().persistent()) {
			// an in-memory store copies the keys from where an iterator starts to the end
			// when it opens one: the whole store at once
			context.schedule(this.settings.purgeInterval(), PunctuationType.WALL_CLOCK_TIME, (now) -> purge());
			if (this.filter != null && this.filter.current == null) {
				this.filter.current = rebuildFilter();
			}
		}
		else {
			context.schedule(this.settings.purgeInterval(), PunctuationType.WALL_CLOCK_TIME, (now) -> startPurge());
			if (this.filter != null && this.filter.current == null) {
				// the filter is built by the purge's slices, a store restored from its
				// changelog included; until then every key is looked up in the store
				startPurge();
			}
		}
	}

	@Override
	public void process(FixedKeyRecord<K, V> record) {
		String key = extractKey(record);
		if (key == null) {
			missingKey(record);
			return;
		}
		long timestamp = record.timestamp();
		boolean late = timestamp < context().currentStreamTimeMs() - this.settings.graceMs();
		// a record on time is stored in the same store call as the lookup (putIfAbsent); a
		// late one is only looked up, since it may be dropped
		Long seenAt = late ? lookUp(key) : rememberIfAbsent(key, timestamp);
		if (seenAt != null && Math.abs(timestamp - seenAt) <= this.settings.windowMs()) {
			this.meters.duplicate();
			if (logger.isDebugEnabled()) {
				logger.debug("Dropped a duplicate in " + this.settings.name() + " at " + coordinates());
			}
			return;
		}
		if (late && this.settings.latePolicy() == LateRecordPolicy.DROP) {
			this.meters.lateDropped();
			if (logger.isDebugEnabled()) {
				logger.debug("Dropped a late record in " + this.settings.name() + " at " + coordinates());
			}
			return;
		}
		if (seenAt != null ? timestamp > seenAt : late) {
			// a key seen outside the window (not purged yet), or a late record forwarded
			remember(key, timestamp);
		}
		if (late) {
			this.meters.lateForwarded();
		}
		else {
			this.meters.forwarded();
		}
		context().forward(record);
	}

	@Override
	public void close() {
		stopSlices();
		TaskFilters filters = this.settings.taskFilters();
		if (filters != null && this.filter != null) {
			filters.release(context().taskId());
			this.filter = null;
		}
	}

	private @Nullable String extractKey(FixedKeyRecord<K, V> record) {
		try {
			String key = this.settings.keyExtractor().extract(record.key(), record.value(), record.headers());
			// a blank key is a missing one, as for @Idempotent listeners
			return (key != null && !key.isBlank()) ? storable(key) : null;
		}
		catch (RuntimeException ex) {
			this.meters.extractorFailed();
			throw new IdempotencyKeyExtractionException(
					"The idempotency key extractor of " + this.settings.name() + " failed on the record at "
							+ coordinates() + ": " + ex.getMessage(), ex);
		}
	}

	/**
	 * Return the key as the store can hold it. The store encodes keys as UTF-8, which has
	 * no form for an unpaired surrogate (Java writes {@code ?} for it, so {@code "k\uD800"},
	 * {@code "k\uDC00"} and {@code "k?"} would be one key): such a key is stored as a NUL
	 * character, {@code utf16:} and the hex form of its UTF-16 code units. So is a key that
	 * starts with NUL, so that no key stored as it is can look like an encoded one.
	 */
	static String storable(String key) {
		if (!key.isEmpty() && key.charAt(0) == '\0') {
			return codeUnits(key);
		}
		for (int i = 0; i < key.length(); i++) {
			char c = key.charAt(i);
			if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
				i++;
			}
			else if (Character.isSurrogate(c)) {
				return codeUnits(key);
			}
		}
		return key;
	}

	private static String codeUnits(String key) {
		StringBuilder codeUnits = new StringBuilder("\0utf16:");
		key.chars().forEach((unit) -> codeUnits.append(HexFormat.of().toHexDigits((char) unit)));
		return codeUnits.toString();
	}

	private void missingKey(FixedKeyRecord<K, V> record) {
		switch (this.settings.missingKeyPolicy()) {
			case FORWARD -> {
				this.meters.missingKeyForwarded();
				context().forward(record);
			}
			case DROP -> {
				this.meters.missingKeyDropped();
				logger.warn("Dropped a record without an idempotency key in " + this.settings.name() + " at "
						+ coordinates());
			}
			case FAIL -> {
				this.meters.missingKeyFailed();
				throw new IdempotencyKeyExtractionException("The record at " + coordinates()
						+ " has no idempotency key (deduplication " + this.settings.name() + ")", null);
			}
		}
	}

	private @Nullable Long lookUp(String key) {
		if (this.filter != null && !this.filter.mightContain(key)) {
			return null;
		}
		return store().get(key);
	}

	/**
	 * Store the key unless the store has it.
	 * @return the timestamp the store had for the key, or {@code null} if it had none and
	 * now has this one
	 */
	private @Nullable Long rememberIfAbsent(String key, long timestamp) {
		if (this.filter != null && !this.filter.put(key)) {
			// certainly new: stored without a lookup (the filter holds it now)
			store().put(key, timestamp);
			stored(timestamp);
			return null;
		}
		Long seenAt = store().putIfAbsent(key, timestamp);
		if (seenAt == null) {
			stored(timestamp);
		}
		return seenAt;
	}

	private void remember(String key, long timestamp) {
		store().put(key, timestamp);
		stored(timestamp);
		if (this.filter != null) {
			this.filter.put(key);
		}
	}

	private void stored(long timestamp) {
		this.oldestStored = Math.min(this.oldestStored, timestamp);
		this.oldestKept = Math.min(this.oldestKept, timestamp);
	}

	/**
	 * Return the timestamp below which a stored key has expired: the window plus the
	 * grace period behind the stream time ({@code Long.MIN_VALUE} before the first record).
	 */
	private long cutoff() {
		long streamTime = context().currentStreamTimeMs();
		return (streamTime < 0) ? Long.MIN_VALUE : streamTime - this.settings.windowMs() - this.settings.graceMs();
	}

	/**
	 * Return whether a purge has something to do: a key may have expired, or the task's
	 * Bloom filter is still to be built. (A filter that fills up grows a layer without a
	 * scan; a purge that deletes keys rebuilds it without them, in one layer.)
	 */
	private boolean purgeNeeded() {
		return cutoff() > this.oldestStored || (this.filter != null && this.filter.current == null);
	}

	/**
	 * Start a purge, unless one is under way: its slices, one every
	 * {@link #PURGE_SLICE_INTERVAL}, each stop after a time budget or a number of keys,
	 * so that the stream thread never stops for a scan of the whole store (about 0.3 µs a
	 * key) nor for the deletes of many expired keys. With the Bloom
	 * pre-check, the same slices build the task's next filter, without the expired keys (a
	 * Bloom filter cannot forget), unless another processor of the task builds it.
	 */
	private void startPurge() {
		if (!this.purging) {
			if (!purgeNeeded()) {
				return;
			}
			this.purging = true;
			this.purgeFrom = null;
			this.oldestKept = Long.MAX_VALUE;
			this.buildingFilter = this.filter != null && this.filter.builder == null
					&& this.filter.startBuilding(this, newFilter());
			// only while a purge is under way: a punctuation makes the task commit
			this.slices = context().schedule(PURGE_SLICE_INTERVAL, PunctuationType.WALL_CLOCK_TIME,
					(now) -> purgeSlice());
		}
		purgeSlice();
	}

	private void stopSlices() {
		if (this.buildingFilter && this.filter != null) {
			this.filter.abandonBuilding(this);
		}
		this.buildingFilter = false;
		this.purging = false;
		this.purgeFrom = null;
		if (this.slices != null) {
			this.slices.cancel();
			this.slices = null;
		}
	}

	/**
	 * Read the next slice of the purge under way and delete its keys that fell out of the
	 * window plus the grace period of stream time. A slice stops once it has held the
	 * stream thread for its time budget, or has read its number of keys, whichever comes
	 * first: what a key costs varies (a delete costs several reads, and a machine under
	 * load stretches both), and a slice that outlasts the interval between slices would
	 * leave the stream thread hardly any time for records.
	 */
	private void purgeSlice() {
		if (!this.purging) {
			return;
		}
		LongSupplier ticker = this.settings.ticker();
		long deadline = ticker.getAsLong() + this.settings.purgeSliceBudgetNanos();
		// before the first record nothing has expired (the cutoff is the minimum), but
		// the purge still reads the store: for the filter, and for the oldest key kept
		long cutoff = cutoff();
		TaskFilters.Shared next = this.buildingFilter ? Objects.requireNonNull(this.filter) : null;
		List<KeyValue<String, @Nullable Long>> expired = new ArrayList<>();
		String resumeAfter = this.purgeFrom;
		String from = resumeAfter;
		int read = 0;
		int deleted = 0;
		boolean done;
		// from the key the slice before ended on (the range includes it: skipped)
		try (KeyValueIterator<String, Long> keys = (from != null) ? store().range(from, null) : store().all()) {
			while (keys.hasNext() && read < this.settings.purgeSliceKeys()) {
				KeyValue<String, Long> entry = keys.next();
				if (entry.key.equals(resumeAfter)) {
					continue;
				}
				read++;
				if (entry.value < cutoff) {
					expired.add(KeyValue.pair(entry.key, null));
					if (expired.size() == DELETE_BATCH) {
						deleted += delete(expired);
					}
				}
				else {
					this.oldestKept = Math.min(this.oldestKept, entry.value);
					if (next != null) {
						next.putNext(entry.key);
					}
				}
				from = entry.key;
				if (ticker.getAsLong() - deadline >= 0) {
					break;
				}
			}
			deleted += delete(expired);
			done = !keys.hasNext();
		}
		this.purgeFrom = from;
		if (done) {
			this.oldestStored = this.oldestKept;
			if (this.buildingFilter) {
				Objects.requireNonNull(this.filter).finishBuilding(this);
				this.buildingFilter = false;
			}
			stopSlices();
		}
		if (deleted > 0 && logger.isDebugEnabled()) {
			logger.debug("Purged " + deleted + " keys older than " + cutoff + " from " + this.settings.storeName()
					+ (done ? "" : ", more to read"));
		}
	}

	/**
	 * Delete the keys (each paired with {@code null}) from the store, in one write to
	 * RocksDB; the changelog gets a tombstone for each. A {@code null} value deletes
	 * without the lookup of the old value that {@code delete(key)} makes first.
	 * @return how many keys were deleted
	 */
	private int delete(List<KeyValue<String, @Nullable Long>> expired) {
		int count = expired.size();
		if (count > 0) {
			store().putAll(expired);
			expired.clear();
		}
		return count;
	}

	/**
	 * Delete the keys that fell out of the window plus the grace period of stream time,
	 * and rebuild the Bloom filter without them (a Bloom filter cannot forget) in the same
	 * scan of the store: the purge of an in-memory store, read at once.
	 */
	private void purge() {
		if (!purgeNeeded()) {
			return;
		}
		long cutoff = cutoff();
		long oldest = Long.MAX_VALUE;
		long deleted = 0;
		List<String> expired = new ArrayList<>();
		TaskFilters.Shared shared = this.filter;
		SeenKeysFilter rebuilt = (shared != null) ? newFilter() : null;
		String from = null;
		do {
			expired.clear();
			try (KeyValueIterator<String, Long> keys = (from != null) ? store().range(from, null) : store().all()) {
				while (keys.hasNext() && expired.size() < PURGE_BATCH) {
					KeyValue<String, Long> entry = keys.next();
					if (entry.value < cutoff) {
						expired.add(entry.key);
					}
					else {
						oldest = Math.min(oldest, entry.value);
						if (rebuilt != null) {
							rebuilt = withKey(rebuilt, entry.key);
						}
					}
					from = entry.key;
				}
				if (!keys.hasNext()) {
					from = null;
				}
			}
			for (String key : expired) {
				store().delete(key);
			}
			deleted += expired.size();
		}
		while (from != null);
		this.oldestStored = oldest;
		if (shared != null && rebuilt != null
				&& (deleted > 0 || shared.current == null || shared.current.layers() > 1)) {
			shared.current = rebuilt;
		}
		if (deleted > 0 && logger.isDebugEnabled()) {
			logger.debug("Purged " + deleted + " keys older than " + cutoff + " from " + this.settings.storeName());
		}
	}

	private SeenKeysFilter rebuildFilter() {
		SeenKeysFilter rebuilt = newFilter();
		try (KeyValueIterator<String, Long> keys = store().all()) {
			while (keys.hasNext()) {
				rebuilt = withKey(rebuilt, keys.next().key);
			}
		}
		return rebuilt;
	}

	/**
	 * Add the key to the filter, and return the filter to add the next keys to: the same,
	 * or one grown from it once it is full.
	 */
	private static SeenKeysFilter withKey(SeenKeysFilter filter, String key) {
		filter.put(key);
		return filter.full() ? filter.grown() : filter;
	}

	/**
	 * Return an empty filter for at least the configured number of keys, or twice as many
	 * as the current filter holds.
	 */
	private SeenKeysFilter newFilter() {
		Deduplication.BloomPreCheck sizing = Objects.requireNonNull(this.settings.bloomPreCheck());
		SeenKeysFilter current = (this.filter != null) ? this.filter.current : null;
		long held = (current != null) ? current.keys() : 0;
		return new SeenKeysFilter(Math.max(sizing.expectedKeys(), 2 * held), sizing.falsePositiveRate());
	}

	private String coordinates() {
		return context().recordMetadata()
			.map((RecordMetadata metadata) -> metadata.topic() + "-" + metadata.partition() + "@" + metadata.offset())
			.orElse("(no input record)");
	}

	private FixedKeyProcessorContext<K, V> context() {
		if (this.context == null) {
			throw new IllegalStateException("Processor not initialized");
		}
		return this.context;
	}

	private KeyValueStore<String, Long> store() {
		if (this.store == null) {
			throw new IllegalStateException("Processor not initialized");
		}
		return this.store;
	}

}
