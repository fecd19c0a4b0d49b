package dev.idempotency.streams;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.regex.Pattern;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorSupplier;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.jspecify.annotations.Nullable;

/**
 * A deduplicating processor for the Kafka Streams Processor API: it forwards the first
 * record of each idempotency key and drops the records with the same key that follow
 * within the window. Apply it with {@code KStream#processValues}; it brings its own state
 * store, so nothing else needs to be added to the topology:
 *
 * <pre class="code">
 * KStream&lt;String, Payment&gt; unique = payments.processValues(Deduplication.&lt;String, Payment&gt;builder("payments").build());
 * </pre>
 *
 * The seen keys live in a key-value store (RocksDB by default) named
 * {@code <name>-idempotency-keys}, backed by a changelog topic, so they are restored
 * after a restart or a rebalance; each key is kept for the window plus the grace period
 * of stream time, then purged. Under {@code processing.guarantee=exactly_once_v2} the
 * store update, the forwarded record and the input offset commit in one Kafka transaction.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class Deduplication<K, V> implements FixedKeyProcessorSupplier<K, V, V> {

	/**
	 * Suffix of the name of every deduplication store; {@link DeduplicationRocksDBConfigSetter}
	 * tunes the stores whose name ends with it and leaves the others alone.
	 */
	public static final String STORE_SUFFIX = "-idempotency-keys";

	/**
	 * Default header that carries the idempotency key, the same as for {@code @Idempotent}
	 * listeners and the outbox.
	 */
	public static final String DEFAULT_KEY_HEADER = "X-Idempotency-Key";

	private static final Pattern LEGAL_NAME = Pattern.compile("[a-zA-Z0-9._-]+");

	/**
	 * Default number of keys the Bloom pre-check's first filter of a task is sized for
	 * (about 180 KB at a 1 % false-positive rate); a filter that holds more grows a layer
	 * for twice as many again.
	 */
	public static final long DEFAULT_BLOOM_EXPECTED_KEYS = 100_000;

	// a slice of a purge reads at most this many keys of the store: a few milliseconds of
	// the stream thread on a quiet machine (about 0.3 µs a key)
	static final int DEFAULT_PURGE_SLICE_KEYS = 20_000;

	// and stops once it has held the stream thread this long (wall clock), a fifth of the
	// interval between slices: a delete costs several reads, a machine under load
	// stretches both, and a slice that outlasts the interval leaves no time for records
	static final Duration DEFAULT_PURGE_SLICE_BUDGET = Duration.ofMillis(10);

	private final Settings<K, V> settings;

	private final StoreBuilder<KeyValueStore<String, Long>> storeBuilder;

	private Deduplication(Settings<K, V> settings, StoreBuilder<KeyValueStore<String, Long>> storeBuilder) {
		this.settings = settings;
		this.storeBuilder = storeBuilder;
	}

	/**
	 * Start building a deduplicating processor.
	 * @param name the name of the processor, used for its store, its changelog topic and
	 * its meters; letters, digits, {@code .}, {@code _} and {@code -} only
	 * @param <K> the record key type
	 * @param <V> the record value type
	 * @return a builder with the defaults: the {@code X-Idempotency-Key} header, a window
	 * of one hour, a grace period of one minute, late and keyless records forwarded, the
	 * Bloom pre-check on
	 */
	public static <K, V> Builder<K, V> builder(String name) {
		return new Builder<>(name);
	}

	/**
	 * Return the name of the store that holds the seen keys.
	 * @return the store name
	 */
	public String storeName() {
		return this.settings.storeName;
	}

	@Override
	public FixedKeyProcessor<K, V, V> get() {
		return new DeduplicatingProcessor<>(this.settings);
	}

	@Override
	public Set<StoreBuilder<?>> stores() {
		return Set.of(this.storeBuilder);
	}

	/**
	 * Builds a {@link Deduplication}.
	 *
	 * @param <K> the record key type
	 * @param <V> the record value type
	 */
	public static final class Builder<K, V> {

		private final String name;

		private IdempotencyKeyExtractor<K, V> keyExtractor = IdempotencyKeyExtractor.header(DEFAULT_KEY_HEADER);

		private Duration window = Duration.ofHours(1);

		private Duration grace = Duration.ofMinutes(1);

		private Duration purgeInterval = Duration.ofMinutes(1);

		private int purgeSliceKeys = DEFAULT_PURGE_SLICE_KEYS;

		private Duration purgeSliceBudget = DEFAULT_PURGE_SLICE_BUDGET;

		private LongSupplier ticker = System::nanoTime;

		private LateRecordPolicy latePolicy = LateRecordPolicy.FORWARD;

		private StreamsMissingKeyPolicy missingKeyPolicy = StreamsMissingKeyPolicy.FORWARD;

		private MeterRegistry meterRegistry = new CompositeMeterRegistry();

		private boolean persistent = true;

		private @Nullable BloomPreCheck bloomPreCheck = new BloomPreCheck(DEFAULT_BLOOM_EXPECTED_KEYS, 0.01);

		private Builder(String name) {
			Objects.requireNonNull(name, "name must not be null");
			if (!LEGAL_NAME.matcher(name).matches()) {
				throw new IllegalArgumentException("Deduplication name '" + name
						+ "' must consist of letters, digits, '.', '_' and '-' only (it names a changelog topic)");
			}
			this.name = name;
		}

		/**
		 * Set how the idempotency key is found (default: the {@code X-Idempotency-Key}
		 * header).
		 * @param keyExtractor the extractor
		 * @return this builder
		 */
		public Builder<K, V> keyExtractor(IdempotencyKeyExtractor<K, V> keyExtractor) {
			this.keyExtractor = Objects.requireNonNull(keyExtractor, "keyExtractor must not be null");
			return this;
		}

		/**
		 * Set how long, in record time, a key is remembered: a record whose key was first
		 * seen at most this long before (or after) its timestamp is a duplicate.
		 * @param window the window, positive
		 * @return this builder
		 */
		public Builder<K, V> window(Duration window) {
			this.window = positive(window, "window");
			return this;
		}

		/**
		 * Set how far behind the stream time a record may be and still be judged
		 * exactly; an older record is late (see {@link LateRecordPolicy}). Keys are kept
		 * for the window plus this grace period. At most the window.
		 * @param grace the grace period, zero or positive
		 * @return this builder
		 */
		public Builder<K, V> grace(Duration grace) {
			Objects.requireNonNull(grace, "grace must not be null");
			if (grace.isNegative()) {
				throw new IllegalArgumentException("grace must not be negative, was " + grace);
			}
			this.grace = grace;
			return this;
		}

		/**
		 * Set how often (wall-clock time) a purge of expired keys starts. A purge reads the
		 * store in slices, one every 50 ms, each of which stops after 10 ms or 20,000 keys
		 * read, whichever comes first, so that the stream thread is never held for long;
		 * the next purge starts once it is done. A purge does not read the store while no
		 * stored key can have expired (the processor keeps the oldest timestamp it stored
		 * or its last purge kept).
		 * @param purgeInterval the interval, positive
		 * @return this builder
		 */
		public Builder<K, V> purgeInterval(Duration purgeInterval) {
			this.purgeInterval = positive(purgeInterval, "purgeInterval");
			return this;
		}

		/**
		 * Set what happens to late records (default: forwarded).
		 * @param latePolicy the policy
		 * @return this builder
		 */
		public Builder<K, V> latePolicy(LateRecordPolicy latePolicy) {
			this.latePolicy = Objects.requireNonNull(latePolicy, "latePolicy must not be null");
			return this;
		}

		/**
		 * Set what happens to records without a key (default: forwarded).
		 * @param missingKeyPolicy the policy
		 * @return this builder
		 */
		public Builder<K, V> missingKeyPolicy(StreamsMissingKeyPolicy missingKeyPolicy) {
			this.missingKeyPolicy = Objects.requireNonNull(missingKeyPolicy, "missingKeyPolicy must not be null");
			return this;
		}

		/**
		 * Set the registry of the {@code idempotency.streams.records} counters (default:
		 * none, nothing is recorded).
		 * @param meterRegistry the registry
		 * @return this builder
		 */
		public Builder<K, V> meterRegistry(MeterRegistry meterRegistry) {
			this.meterRegistry = Objects.requireNonNull(meterRegistry, "meterRegistry must not be null");
			return this;
		}

		/**
		 * Keep the seen keys in memory instead of RocksDB (still backed by the changelog
		 * topic). For small windows and tests.
		 * @return this builder
		 */
		public Builder<K, V> inMemory() {
			this.persistent = false;
			return this;
		}

		/**
		 * Size the in-memory Bloom filter of the seen keys that is in front of the store
		 * (by default, for {@value #DEFAULT_BLOOM_EXPECTED_KEYS} keys at 1 %), so that a key
		 * the filter has never seen is known new without a store lookup. The filter is
		 * per task (partition), about 1.5 bytes per expected key at a 1 % false-positive
		 * rate; once it holds more keys than expected, it grows at once, without a scan of
		 * the store: a layer for twice as many keys again, at half the false-positive rate,
		 * in front of the full one (every "maybe" of a layer costs a store lookup, so the
		 * layers together stay under twice the rate). It is built from the store by the
		 * purge's slices when the task starts (until then every key is looked up in the
		 * store) and again in every purge that reads the store, in one layer, so that it
		 * forgets the purged keys; while a purge builds the next filter, both are held.
		 * @param expectedKeys number of keys one task is expected to hold
		 * @param falsePositiveRate wanted rate of false "maybe seen" answers, which cost a
		 * store lookup (never a wrong decision)
		 * @return this builder
		 */
		public Builder<K, V> bloomPreCheck(long expectedKeys, double falsePositiveRate) {
			this.bloomPreCheck = new BloomPreCheck(expectedKeys, falsePositiveRate);
			return this;
		}

		/**
		 * Look every key up in the store, without the in-memory Bloom filter in front of
		 * it: no memory for a filter, and a duplicate costs one hash less, but each new key
		 * costs a store lookup.
		 * @return this builder
		 */
		public Builder<K, V> withoutBloomPreCheck() {
			this.bloomPreCheck = null;
			return this;
		}

		/**
		 * Build the processor supplier.
		 * @return the supplier, to pass to {@code KStream#processValues}
		 */
		public Deduplication<K, V> build() {
			// the store keeps one timestamp a key: a record on time may be older than the
			// stored one by up to the grace period, and only within the window is it
			// certainly a copy; older, it and all of its copies would be forwarded
			if (this.grace.compareTo(this.window) > 0) {
				throw new IllegalArgumentException("grace (" + this.grace + ") must not be longer than the window ("
						+ this.window + "): a record on time could be older than the window than a stored key, "
						+ "and its copies would not be recognized");
			}
			String storeName = this.name + STORE_SUFFIX;
			KeyValueBytesStoreSupplier supplier = this.persistent ? Stores.persistentKeyValueStore(storeName)
					: Stores.inMemoryKeyValueStore(storeName);
			StoreBuilder<KeyValueStore<String, Long>> storeBuilder = Stores
				.keyValueStoreBuilder(supplier, Serdes.String(), Serdes.Long())
				.withLoggingEnabled(Map.of());
			Settings<K, V> settings = new Settings<>(this.name, storeName, this.keyExtractor, this.window.toMillis(),
					this.grace.toMillis(), this.purgeInterval, this.latePolicy, this.missingKeyPolicy,
					this.meterRegistry, this.bloomPreCheck, (this.bloomPreCheck != null) ? new TaskFilters() : null,
					this.purgeSliceKeys, this.purgeSliceBudget.toNanos(), this.ticker);
			return new Deduplication<>(settings, storeBuilder);
		}

		/**
		 * How many keys of the store one slice of a purge reads (for tests).
		 * @param keys the number of keys, at least 2
		 * @return this builder
		 */
		Builder<K, V> purgeSliceKeys(int keys) {
			if (keys < 2) {
				throw new IllegalArgumentException("purgeSliceKeys must be at least 2, was " + keys);
			}
			this.purgeSliceKeys = keys;
			return this;
		}

		/**
		 * How long one slice of a purge may hold the stream thread, read on the given
		 * clock (for tests).
		 * @param budget the time budget, positive
		 * @param ticker the clock, in nanoseconds
		 * @return this builder
		 */
		Builder<K, V> purgeSliceBudget(Duration budget, LongSupplier ticker) {
			this.purgeSliceBudget = positive(budget, "purgeSliceBudget");
			this.ticker = Objects.requireNonNull(ticker, "ticker must not be null");
			return this;
		}

		private static Duration positive(Duration value, String name) {
			Objects.requireNonNull(value, name + " must not be null");
			if (value.isZero() || value.isNegative()) {
				throw new IllegalArgumentException(name + " must be positive, was " + value);
			}
			return value;
		}

	}

	record BloomPreCheck(long expectedKeys, double falsePositiveRate) {

		BloomPreCheck {
			if (expectedKeys <= 0) {
				throw new IllegalArgumentException("expectedKeys must be positive, was " + expectedKeys);
			}
			if (!(falsePositiveRate > 0 && falsePositiveRate < 1)) {
				throw new IllegalArgumentException(
						"falsePositiveRate must be between 0 and 1 (exclusive), was " + falsePositiveRate);
			}
		}

	}

	record Settings<K, V>(String name, String storeName, IdempotencyKeyExtractor<K, V> keyExtractor, long windowMs,
			long graceMs, Duration purgeInterval, LateRecordPolicy latePolicy, StreamsMissingKeyPolicy missingKeyPolicy,
			MeterRegistry meterRegistry, @Nullable BloomPreCheck bloomPreCheck, @Nullable TaskFilters taskFilters,
			int purgeSliceKeys, long purgeSliceBudgetNanos, LongSupplier ticker) {
	}

}
