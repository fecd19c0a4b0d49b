package dev.idempotency.streams;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Configuration of the deduplicating Kafka Streams processors made by
 * {@link StreamsDeduplication}.
 *
 * @param enabled Whether to provide the StreamsDeduplication bean and the RocksDB tuning
 * of its stores.
 * @param keyHeader Name of the record header that carries the idempotency key.
 * @param window How long, in record time, a key is remembered: a record whose key was
 * first seen at most this long before it is dropped as a duplicate.
 * @param grace How far behind the stream time a record may be and still be judged
 * exactly; keys are kept for the window plus this grace period, and an older record is
 * late. At most the window.
 * @param purgeInterval How often (wall-clock time) a purge of expired keys starts; it
 * reads the store in slices (one every 50 ms, each of at most 10 ms), and the next
 * starts once it is done. A purge does not read the store while no stored key can have
 * expired.
 * @param latePolicy What to do with a late record whose key is not in the store: forward
 * it (it may be a duplicate) or drop it (it may be new). Counted either way.
 * @param missingKey What to do with a record without an idempotency key: forward it
 * without deduplication, drop it, or fail with an exception. Counted either way.
 * @param bloomPreCheck The in-memory Bloom filter in front of each store.
 * @param rocksdb The RocksDB tuning of the deduplication stores.
 */
@ConfigurationProperties("idempotency.streams")
public record IdempotencyStreamsProperties(@DefaultValue("true") boolean enabled,
		@DefaultValue(Deduplication.DEFAULT_KEY_HEADER) String keyHeader, @DefaultValue("1h") Duration window,
		@DefaultValue("1m") Duration grace, @DefaultValue("1m") Duration purgeInterval,
		@DefaultValue("forward") LateRecordPolicy latePolicy, @DefaultValue("forward") StreamsMissingKeyPolicy missingKey,
		@DefaultValue BloomPreCheck bloomPreCheck, @DefaultValue RocksDb rocksdb) {

	public IdempotencyStreamsProperties {
		if (keyHeader.isBlank()) {
			throw new IllegalArgumentException("idempotency.streams.key-header must not be blank");
		}
		if (window.isZero() || window.isNegative()) {
			throw new IllegalArgumentException("idempotency.streams.window must be positive, was " + window);
		}
		if (grace.isNegative()) {
			throw new IllegalArgumentException("idempotency.streams.grace must not be negative, was " + grace);
		}
		if (grace.compareTo(window) > 0) {
			throw new IllegalArgumentException("idempotency.streams.grace (" + grace
					+ ") must not be longer than idempotency.streams.window (" + window + ")");
		}
		if (purgeInterval.isZero() || purgeInterval.isNegative()) {
			throw new IllegalArgumentException(
					"idempotency.streams.purge-interval must be positive, was " + purgeInterval);
		}
	}

	/**
	 * An in-memory Bloom filter of the seen keys in front of each store (one per task):
	 * a key it has never seen is new without a store lookup.
	 *
	 * @param enabled Whether to check an in-memory Bloom filter before the store.
	 * @param expectedKeys Number of keys one task (input partition) is expected to hold
	 * within the window plus grace period. Sizes the first filter of each task: about 1.5
	 * bytes per key at a 1% false-positive rate; a filter that holds more keys grows a
	 * layer for twice as many again, without a scan of the store.
	 * @param falsePositiveRate Wanted rate of false "maybe seen" answers; each costs a
	 * store lookup, never a wrong decision.
	 */
	public record BloomPreCheck(@DefaultValue("true") boolean enabled, @DefaultValue("100000") long expectedKeys,
			@DefaultValue("0.01") double falsePositiveRate) {

		public BloomPreCheck {
			if (expectedKeys <= 0) {
				throw new IllegalArgumentException(
						"idempotency.streams.bloom-pre-check.expected-keys must be positive, was " + expectedKeys);
			}
			if (!(falsePositiveRate > 0 && falsePositiveRate < 1)) {
				throw new IllegalArgumentException(
						"idempotency.streams.bloom-pre-check.false-positive-rate must be between 0 and 1, was "
								+ falsePositiveRate);
			}
		}

	}

	/**
	 * RocksDB tuning of the deduplication stores, installed as the application's
	 * rocksdb.config.setter unless the application has its own.
	 *
	 * @param enabled Whether to install the deduplication RocksDB config setter in the
	 * Streams configuration of StreamsBuilderFactoryBean (when the application sets no
	 * rocksdb.config.setter of its own).
	 * @param bloomBitsPerKey Bits per key of the RocksDB Bloom filters of the
	 * deduplication stores (10 gives about 1% false positives).
	 * @param blockCacheSize Size of the block cache shared by all deduplication stores of
	 * the JVM; it also holds their index and filter blocks.
	 */
	public record RocksDb(@DefaultValue("true") boolean enabled, @DefaultValue("10") double bloomBitsPerKey,
			@DefaultValue("16MB") DataSize blockCacheSize) {

		public RocksDb {
			if (bloomBitsPerKey <= 0) {
				throw new IllegalArgumentException(
						"idempotency.streams.rocksdb.bloom-bits-per-key must be positive, was " + bloomBitsPerKey);
			}
			if (blockCacheSize.toBytes() <= 0) {
				throw new IllegalArgumentException(
						"idempotency.streams.rocksdb.block-cache-size must be positive, was " + blockCacheSize);
			}
		}

	}

}
