package dev.idempotency.streams;

import java.util.Map;
import java.util.Properties;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.junit.jupiter.api.Test;
import org.rocksdb.Options;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.config.KafkaStreamsConfiguration;
import org.springframework.kafka.config.StreamsBuilderFactoryBean;
import org.springframework.kafka.config.StreamsBuilderFactoryBeanConfigurer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What {@link IdempotencyStreamsAutoConfiguration} provides, when it backs off, and how it
 * sets the RocksDB config setter of spring-kafka's {@link StreamsBuilderFactoryBean}.
 */
class IdempotencyStreamsAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(IdempotencyStreamsAutoConfiguration.class));

	@Test
	void providesADeduplicationFactoryWithTheConfiguredSettingsAndTheApplicationsMeterRegistry() {
		this.runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.withPropertyValues("idempotency.streams.window=10m", "idempotency.streams.late-policy=drop",
					"idempotency.streams.bloom-pre-check.enabled=true",
					"idempotency.streams.bloom-pre-check.expected-keys=5000")
			.run((context) -> {
				Deduplication<String, String> deduplication = context.getBean(StreamsDeduplication.class)
					.processor("payments");
				assertThat(deduplication.storeName()).isEqualTo("payments-idempotency-keys");
				IdempotencyStreamsProperties properties = context.getBean(IdempotencyStreamsProperties.class);
				assertThat(properties.window()).hasMinutes(10);
				assertThat(properties.latePolicy()).isEqualTo(LateRecordPolicy.DROP);
				assertThat(properties.bloomPreCheck().expectedKeys()).isEqualTo(5000);
				deduplication.get();
				assertThat(context.getBean(MeterRegistry.class).find(DeduplicationMeters.RECORDS).counters())
					.hasSize(8);
			});
	}

	@Test
	void checksABloomFilterBeforeTheStoreByDefault() {
		this.runner.run((context) -> {
			IdempotencyStreamsProperties.BloomPreCheck preCheck = context.getBean(IdempotencyStreamsProperties.class)
				.bloomPreCheck();
			assertThat(preCheck.enabled()).isTrue();
			assertThat(preCheck.expectedKeys()).isEqualTo(Deduplication.DEFAULT_BLOOM_EXPECTED_KEYS);
			assertThat(preCheck.falsePositiveRate()).isEqualTo(0.01);
		});
	}

	@Test
	void backsOffWithoutKafkaStreams() {
		this.runner.withClassLoader(new FilteredClassLoader(KafkaStreams.class))
			.run((context) -> assertThat(context).doesNotHaveBean(StreamsDeduplication.class));
	}

	@Test
	void backsOffWhenDisabled() {
		this.runner.withPropertyValues("idempotency.streams.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(StreamsDeduplication.class)
				.doesNotHaveBean(StreamsBuilderFactoryBeanConfigurer.class));
	}

	@Test
	void keepsAStreamsDeduplicationOfTheApplication() {
		this.runner.withUserConfiguration(OwnDeduplication.class)
			.run((context) -> assertThat(context.getBean(StreamsDeduplication.class))
				.isSameAs(context.getBean(OwnDeduplication.class).deduplication));
	}

	@Test
	void failsAtStartupOnAGraceLongerThanTheWindow() {
		this.runner.withPropertyValues("idempotency.streams.window=1m", "idempotency.streams.grace=2m")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("idempotency.streams.grace (PT2M) must not be longer than idempotency.streams.window (PT1M)"));
	}

	@Test
	void failsAtStartupOnANegativeGraceNamingTheProperty() {
		this.runner.withPropertyValues("idempotency.streams.grace=-1s")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("idempotency.streams.grace must not be negative"));
	}

	@Test
	void installsTheDeduplicationConfigSetterWithItsSettingsInTheStreamsConfiguration() {
		this.runner
			.withPropertyValues("idempotency.streams.rocksdb.bloom-bits-per-key=14",
					"idempotency.streams.rocksdb.block-cache-size=32MB")
			.run((context) -> {
				StreamsBuilderFactoryBean factoryBean = factoryBean(Map.of());
				context.getBean(StreamsBuilderFactoryBeanConfigurer.class).configure(factoryBean);
				Properties configuration = factoryBean.getStreamsConfiguration();
				assertThat(configuration.get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG))
					.isEqualTo(DeduplicationRocksDBConfigSetter.class);
				assertThat(configuration.get(DeduplicationRocksDBConfigSetter.BLOOM_BITS_PER_KEY_CONFIG))
					.isEqualTo(14.0);
				assertThat(configuration.get(DeduplicationRocksDBConfigSetter.BLOCK_CACHE_SIZE_CONFIG))
					.isEqualTo(32L * 1024 * 1024);
			});
	}

	@Test
	void keepsTheRocksDBConfigSetterOfTheApplication() {
		this.runner.run((context) -> {
			StreamsBuilderFactoryBean factoryBean = factoryBean(
					Map.of(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, OwnSetter.class.getName()));
			context.getBean(StreamsBuilderFactoryBeanConfigurer.class).configure(factoryBean);
			assertThat(factoryBean.getStreamsConfiguration().get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG))
				.isEqualTo(OwnSetter.class.getName());
			assertThat(factoryBean.getStreamsConfiguration())
				.doesNotContainKey(DeduplicationRocksDBConfigSetter.BLOOM_BITS_PER_KEY_CONFIG);
		});
	}

	@Test
	void leavesRocksDBAloneWhenItsTuningIsDisabledOrSpringKafkaIsAbsent() {
		this.runner.withPropertyValues("idempotency.streams.rocksdb.enabled=false")
			.run((context) -> assertThat(context).hasSingleBean(StreamsDeduplication.class)
				.doesNotHaveBean(StreamsBuilderFactoryBeanConfigurer.class));
		this.runner.withClassLoader(new FilteredClassLoader(StreamsBuilderFactoryBean.class))
			.run((context) -> assertThat(context).hasSingleBean(StreamsDeduplication.class)
				.doesNotHaveBean(StreamsBuilderFactoryBeanConfigurer.class));
	}

	private static StreamsBuilderFactoryBean factoryBean(Map<String, Object> extra) {
		Map<String, Object> configuration = new java.util.HashMap<>(
				Map.of(StreamsConfig.APPLICATION_ID_CONFIG, "app", StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092"));
		configuration.putAll(extra);
		return new StreamsBuilderFactoryBean(new KafkaStreamsConfiguration(configuration));
	}

	@Configuration(proxyBeanMethods = false)
	static class OwnDeduplication {

		final StreamsDeduplication deduplication = new StreamsDeduplication(
				new IdempotencyStreamsProperties(true, "Key", java.time.Duration.ofMinutes(1),
						java.time.Duration.ZERO, java.time.Duration.ofMinutes(1), LateRecordPolicy.DROP,
						StreamsMissingKeyPolicy.FAIL, new IdempotencyStreamsProperties.BloomPreCheck(false, 10, 0.1),
						new IdempotencyStreamsProperties.RocksDb(true, 10,
								org.springframework.util.unit.DataSize.ofMegabytes(1))),
				new SimpleMeterRegistry());

		@Bean
		StreamsDeduplication streamsDeduplication() {
			return this.deduplication;
		}

	}

	public static class OwnSetter implements RocksDBConfigSetter {

		@Override
		public void setConfig(String storeName, Options options, Map<String, Object> configs) {
		}

		@Override
		public void close(String storeName, Options options) {
		}

	}

}
