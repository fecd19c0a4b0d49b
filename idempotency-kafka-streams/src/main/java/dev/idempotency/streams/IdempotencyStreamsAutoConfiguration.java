package dev.idempotency.streams;

import java.util.Properties;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.kafka.config.StreamsBuilderFactoryBean;
import org.springframework.kafka.config.StreamsBuilderFactoryBeanConfigurer;

/**
 * Auto-configuration of deduplicating Kafka Streams processors: a
 * {@link StreamsDeduplication} bean, and the RocksDB tuning of their stores in the
 * Streams configuration of spring-kafka's {@link StreamsBuilderFactoryBean}.
 */
@AutoConfiguration(afterName = { "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
		"org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
		"org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
		"org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration" })
@ConditionalOnClass(KafkaStreams.class)
@ConditionalOnBooleanProperty(name = "idempotency.streams.enabled", matchIfMissing = true)
@EnableConfigurationProperties(IdempotencyStreamsProperties.class)
public final class IdempotencyStreamsAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	StreamsDeduplication streamsDeduplication(IdempotencyStreamsProperties properties,
			ObjectProvider<MeterRegistry> meterRegistry) {
		return new StreamsDeduplication(properties, meterRegistry.getIfAvailable(CompositeMeterRegistry::new));
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(StreamsBuilderFactoryBean.class)
	@ConditionalOnBooleanProperty(name = "idempotency.streams.rocksdb.enabled", matchIfMissing = true)
	static class RocksDBConfiguration {

		@Bean
		static StreamsBuilderFactoryBeanConfigurer idempotencyRocksDBConfigurer(
				IdempotencyStreamsProperties properties) {
			return new RocksDBConfigSetterInstaller(properties.rocksdb());
		}

	}

	/**
	 * Sets {@code rocksdb.config.setter} to {@link DeduplicationRocksDBConfigSetter} unless
	 * the application has one; runs last, so it sees the settings of the others.
	 */
	static final class RocksDBConfigSetterInstaller implements StreamsBuilderFactoryBeanConfigurer {

		private static final Log logger = LogFactory.getLog(RocksDBConfigSetterInstaller.class);

		private final IdempotencyStreamsProperties.RocksDb rocksdb;

		RocksDBConfigSetterInstaller(IdempotencyStreamsProperties.RocksDb rocksdb) {
			this.rocksdb = rocksdb;
		}

		@Override
		public void configure(StreamsBuilderFactoryBean factoryBean) {
			Properties configuration = factoryBean.getStreamsConfiguration();
			if (configuration == null) {
				return;
			}
			Object existing = configuration.get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG);
			if (existing != null) {
				logger.info("Kafka Streams already has rocksdb.config.setter " + name(existing)
						+ "; the deduplication stores keep its settings (call "
						+ "DeduplicationRocksDBConfigSetter.configureDeduplicationStore from it to tune them)");
				return;
			}
			configuration.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG,
					DeduplicationRocksDBConfigSetter.class);
			configuration.putIfAbsent(DeduplicationRocksDBConfigSetter.BLOOM_BITS_PER_KEY_CONFIG,
					this.rocksdb.bloomBitsPerKey());
			configuration.putIfAbsent(DeduplicationRocksDBConfigSetter.BLOCK_CACHE_SIZE_CONFIG,
					this.rocksdb.blockCacheSize().toBytes());
			factoryBean.setStreamsConfiguration(configuration);
		}

		@Override
		public int getOrder() {
			return Ordered.LOWEST_PRECEDENCE;
		}

		private static String name(Object setter) {
			return (setter instanceof Class<?> type) ? type.getName() : setter.toString();
		}

	}

}
