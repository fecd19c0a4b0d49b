package dev.idempotency.streams;

import java.util.Map;

import org.apache.kafka.streams.state.internals.BlockBasedTableConfigWithAccessibleCache;
import org.junit.jupiter.api.Test;
import org.rocksdb.BloomFilter;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

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

	private static Options kafkaStreamsOptions() {
		Options options = new Options();
		options.setTableFormatConfig(new BlockBasedTableConfigWithAccessibleCache());
		return options;
	}

}
