package dev.idempotency.streams;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

import org.apache.kafka.streams.state.internals.BlockBasedTableConfigWithAccessibleCache;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompactionStyle;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.Statistics;
import org.rocksdb.TickerType;
import org.rocksdb.WriteOptions;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The RocksDB settings of deduplication stores, on real RocksDB {@link Options} set up as
 * Kafka Streams sets them up before it calls the setter.
 */
class DeduplicationRocksDBConfigSetterTests {

	static {
		RocksDB.loadLibrary();
	}

	@Test
	void leavesStoresThatAreNotDeduplicationStoresAsKafkaStreamsConfiguredThem() {
		try (Options options = kafkaStreamsOptions()) {
			BlockBasedTableConfigWithAccessibleCache table = (BlockBasedTableConfigWithAccessibleCache) options
				.tableFormatConfig();
			DeduplicationRocksDBConfigSetter setter = new DeduplicationRocksDBConfigSetter();
			setter.setConfig("orders-aggregate", options, Map.of());
			assertThat(options.tableFormatConfig()).isSameAs(table);
			assertThat(table.blockCache()).isNull();
			assertThat(table.filterPolicy()).isNull();
			assertThat(options.memtableWholeKeyFiltering()).isFalse();
			setter.close("orders-aggregate", options);
		}
	}

	@Test
	void setsABloomFilterAndOneSharedBlockCacheOnDeduplicationStoresAndReleasesThemOnClose() {
		int before = DeduplicationRocksDBConfigSetter.sharedCacheUsers();
		try (Options first = kafkaStreamsOptions(); Options second = kafkaStreamsOptions()) {
			DeduplicationRocksDBConfigSetter firstSetter = new DeduplicationRocksDBConfigSetter();
			DeduplicationRocksDBConfigSetter secondSetter = new DeduplicationRocksDBConfigSetter();
			Map<String, Object> configs = Map.of(DeduplicationRocksDBConfigSetter.BLOOM_BITS_PER_KEY_CONFIG, "12",
					DeduplicationRocksDBConfigSetter.BLOCK_CACHE_SIZE_CONFIG, 1024L * 1024);
			firstSetter.setConfig("payments" + Deduplication.STORE_SUFFIX, first, configs);
			secondSetter.setConfig("orders" + Deduplication.STORE_SUFFIX, second, configs);
			BlockBasedTableConfigWithAccessibleCache firstTable = (BlockBasedTableConfigWithAccessibleCache) first
				.tableFormatConfig();
			BlockBasedTableConfigWithAccessibleCache secondTable = (BlockBasedTableConfigWithAccessibleCache) second
				.tableFormatConfig();
			assertThat(firstTable.filterPolicy()).isInstanceOf(BloomFilter.class);
			assertThat(firstTable.wholeKeyFiltering()).isTrue();
			assertThat(firstTable.cacheIndexAndFilterBlocks()).isTrue();
			assertThat(firstTable.blockCache()).isNotNull().isSameAs(secondTable.blockCache());
			assertThat(first.optimizeFiltersForHits()).isFalse();
			assertThat(first.memtablePrefixBloomSizeRatio()).isEqualTo(0.1);
			assertThat(first.memtableWholeKeyFiltering()).isTrue();
			assertThat(DeduplicationRocksDBConfigSetter.sharedCacheUsers()).isEqualTo(before + 2);

			firstSetter.close("payments" + Deduplication.STORE_SUFFIX, first);
			secondSetter.close("orders" + Deduplication.STORE_SUFFIX, second);
			assertThat(DeduplicationRocksDBConfigSetter.sharedCacheUsers()).isEqualTo(before);
		}
	}

	@Test
	void rejectsABitsPerKeySettingThatIsNotAPositiveNumber() {
		try (Options options = kafkaStreamsOptions()) {
			DeduplicationRocksDBConfigSetter setter = new DeduplicationRocksDBConfigSetter();
			assertThatIllegalArgumentException()
				.isThrownBy(() -> setter.setConfig("payments" + Deduplication.STORE_SUFFIX, options,
						Map.of(DeduplicationRocksDBConfigSetter.BLOOM_BITS_PER_KEY_CONFIG, "ten")))
				.withMessage("idempotency.streams.rocksdb.bloom-bits-per-key must be a number, was 'ten'");
			assertThatIllegalArgumentException()
				.isThrownBy(() -> setter.setConfig("payments" + Deduplication.STORE_SUFFIX, options,
						Map.of(DeduplicationRocksDBConfigSetter.BLOCK_CACHE_SIZE_CONFIG, 0)))
				.withMessage("idempotency.streams.rocksdb.block-cache-size must be positive, was 0");
		}
	}

	/**
	 * A lookup of a new key must be answered by a Bloom filter held in the block cache. A
	 * whole-table filter of a large store is bigger than a shard of the cache (RocksDB
	 * shards a cache into parts of 512 KiB) and is then read from the file again at every
	 * lookup; partitioned filters keep each part small.
	 */
	@Test
	void answersLookupsOfNewKeysInALargeStoreFromFiltersKeptInTheBlockCache(@TempDir Path directory)
			throws RocksDBException {
		String storeName = "payments" + Deduplication.STORE_SUFFIX;
		DeduplicationRocksDBConfigSetter setter = new DeduplicationRocksDBConfigSetter();
		try (Options options = kafkaStreamsOptions(); Statistics statistics = new Statistics()) {
			// as Kafka Streams opens a store
			options.setCreateIfMissing(true);
			options.setCompactionStyle(CompactionStyle.UNIVERSAL);
			options.setWriteBufferSize(16L * 1024 * 1024);
			options.setMaxWriteBufferNumber(3);
			options.setStatistics(statistics);
			setter.setConfig(storeName, options, Map.of());
			try (RocksDB db = RocksDB.open(options, directory.toString());
					WriteOptions write = new WriteOptions().setDisableWAL(true);
					FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
				byte[] value = new byte[8];
				// two million keys, compacted into one file: its whole-table filter (10 bits
				// per key) is about 2.4 MB
				for (int i = 0; i < 2_000_000; i++) {
					db.put(write, ("streams-bench-s-new-0471eb83-" + i).getBytes(StandardCharsets.UTF_8), value);
				}
				db.flush(flush);
				db.compactRange();
				int lookups = 2_000;
				long filterReadsBefore = statistics.getTickerCount(TickerType.BLOCK_CACHE_FILTER_MISS);
				for (int i = 0; i < lookups; i++) {
					assertThat(db.get(("streams-bench-s-new-0471eb83-" + i + "-new").getBytes(StandardCharsets.UTF_8))).isNull();
				}
				long filterReads = statistics.getTickerCount(TickerType.BLOCK_CACHE_FILTER_MISS) - filterReadsBefore;
				assertThat(filterReads).as("filter blocks read from the file for %d lookups", lookups)
					.isLessThan(lookups / 4);
			}
		}
		finally {
			setter.close(storeName, null);
		}
	}

	private static Options kafkaStreamsOptions() {
		Options options = new Options();
		options.setTableFormatConfig(new BlockBasedTableConfigWithAccessibleCache());
		return options;
	}

}
