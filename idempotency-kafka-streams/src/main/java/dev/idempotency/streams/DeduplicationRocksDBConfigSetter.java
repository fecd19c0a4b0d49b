package dev.idempotency.streams;

import java.util.Map;

import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.jspecify.annotations.Nullable;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.Cache;
import org.rocksdb.IndexType;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;

/**
 * Tunes the RocksDB instances of the deduplication stores (the stores whose name ends
 * with {@link Deduplication#STORE_SUFFIX}) for point lookups of keys that are mostly
 * absent: a Bloom filter with the configured bits per key, whole-key filtering, the
 * filters kept for the last level too, a Bloom filter on the memtable, and one block
 * cache shared by all deduplication stores of the JVM, which also holds the index and
 * filter blocks (partitioned, so that each part fits the cache however large the store
 * grows) so that their memory is bounded. Every other store of the application
 * keeps Kafka Streams' defaults.
 * <p>
 * {@code rocksdb.config.setter} is a single setting of the whole Streams application.
 * An application with a setter of its own can keep it and call
 * {@link #configureDeduplicationStore} from it (and {@link #closeDeduplicationStore} from
 * its {@code close}).
 * <p>
 * Settings, read from the Streams configuration: {@value #BLOOM_BITS_PER_KEY_CONFIG}
 * (default {@value #DEFAULT_BLOOM_BITS_PER_KEY}) and {@value #BLOCK_CACHE_SIZE_CONFIG} in
 * bytes (default 16 MiB).
 */
public class DeduplicationRocksDBConfigSetter implements RocksDBConfigSetter {

	/**
	 * Streams configuration key of the bits per key of the Bloom filters.
	 */
	public static final String BLOOM_BITS_PER_KEY_CONFIG = "idempotency.streams.rocksdb.bloom-bits-per-key";

	/**
	 * Streams configuration key of the size in bytes of the shared block cache.
	 */
	public static final String BLOCK_CACHE_SIZE_CONFIG = "idempotency.streams.rocksdb.block-cache-size";

	static final double DEFAULT_BLOOM_BITS_PER_KEY = 10;

	static final long DEFAULT_BLOCK_CACHE_SIZE = 16L * 1024 * 1024;

	static final long METADATA_BLOCK_SIZE = 4096;

	// a tenth of the write buffer: about 13 bits per key for keys of ~100 bytes
	static final double MEMTABLE_BLOOM_SIZE_RATIO = 0.1;

	private static @Nullable Cache sharedCache;

	private static int sharedCacheUsers;

	private @Nullable BloomFilter filter;

	@Override
	public void setConfig(String storeName, Options options, Map<String, Object> configs) {
		configureDeduplicationStore(storeName, options, configs);
	}

	@Override
	public void close(String storeName, Options options) {
		closeDeduplicationStore(storeName);
	}

	/**
	 * Apply the deduplication settings when the store is a deduplication store; do
	 * nothing otherwise.
	 * @param storeName the store name
	 * @param options the options of its RocksDB instance
	 * @param configs the Streams configuration
	 */
	public void configureDeduplicationStore(String storeName, Options options, Map<String, Object> configs) {
		if (!isDeduplicationStore(storeName) || this.filter != null) {
			return;
		}
		double bitsPerKey = number(configs, BLOOM_BITS_PER_KEY_CONFIG, DEFAULT_BLOOM_BITS_PER_KEY);
		long cacheSize = (long) number(configs, BLOCK_CACHE_SIZE_CONFIG, DEFAULT_BLOCK_CACHE_SIZE);
		BlockBasedTableConfig table = (BlockBasedTableConfig) options.tableFormatConfig();
		this.filter = new BloomFilter(bitsPerKey, false);
		table.setFilterPolicy(this.filter);
		table.setWholeKeyFiltering(true);
		table.setBlockCache(acquireCache(cacheSize));
		table.setCacheIndexAndFilterBlocks(true);
		table.setCacheIndexAndFilterBlocksWithHighPriority(true);
		table.setPinL0FilterAndIndexBlocksInCache(true);
		// Partitioned filters and index: the whole-table filter of a large store (about
		// 1.2 MB per million keys) is bigger than a shard of the block cache (RocksDB
		// splits a cache into shards of 512 KiB and more), so it was read back from the
		// file at every lookup of a key; partitions of a few KiB stay in the cache, and
		// their small top-level index is pinned.
		table.setIndexType(IndexType.kTwoLevelIndexSearch);
		table.setPartitionFilters(true);
		table.setMetadataBlockSize(METADATA_BLOCK_SIZE);
		table.setPinTopLevelIndexAndFilter(true);
		options.setTableFormatConfig(table);
		// most lookups of new keys miss: the last level's filters are the ones that pay
		options.setOptimizeFiltersForHits(false);
		// and most of them miss the memtable too: a Bloom filter of the memtable's keys
		// answers them without a walk of its skip list
		options.setMemtablePrefixBloomSizeRatio(MEMTABLE_BLOOM_SIZE_RATIO);
		options.setMemtableWholeKeyFiltering(true);
	}

	/**
	 * Release what {@link #configureDeduplicationStore} created for the store.
	 * @param storeName the store name
	 */
	public void closeDeduplicationStore(String storeName) {
		if (this.filter == null) {
			return;
		}
		this.filter.close();
		this.filter = null;
		releaseCache();
	}

	static boolean isDeduplicationStore(String storeName) {
		return storeName.endsWith(Deduplication.STORE_SUFFIX);
	}

	private static synchronized Cache acquireCache(long size) {
		if (sharedCache == null) {
			sharedCache = new LRUCache(size);
		}
		sharedCacheUsers++;
		return sharedCache;
	}

	private static synchronized void releaseCache() {
		sharedCacheUsers--;
		if (sharedCacheUsers == 0 && sharedCache != null) {
			sharedCache.close();
			sharedCache = null;
		}
	}

	static synchronized int sharedCacheUsers() {
		return sharedCacheUsers;
	}

	private static double number(Map<String, Object> configs, String name, double defaultValue) {
		Object value = configs.get(name);
		if (value == null) {
			return defaultValue;
		}
		try {
			double number = (value instanceof Number n) ? n.doubleValue() : Double.parseDouble(value.toString());
			if (number <= 0) {
				throw new IllegalArgumentException(name + " must be positive, was " + value);
			}
			return number;
		}
		catch (NumberFormatException ex) {
			throw new IllegalArgumentException(name + " must be a number, was '" + value + "'", ex);
		}
	}

}
