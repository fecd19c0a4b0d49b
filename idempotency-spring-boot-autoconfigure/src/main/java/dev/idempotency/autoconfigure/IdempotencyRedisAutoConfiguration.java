package dev.idempotency.autoconfigure;

import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.cache.RedisProcessedKeyCache;
import dev.idempotency.internal.cache.RedisProcessedMessageStore;
import dev.idempotency.internal.consumer.ConsumerFactoryPostProcessor;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.store.ProcessedMessageStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.task.SimpleAsyncTaskExecutor;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.kafka.annotation.KafkaListener;

/**
 * Auto-configuration of Redis for {@code @Idempotent} listeners, when the application has
 * a Redis connection: a write-through cache of processed keys in front of the JDBC store
 * (the default), or Redis as the store itself ({@code idempotency.store.type=redis}).
 */
@AutoConfiguration(before = IdempotencyAutoConfiguration.class,
		after = IdempotencyJdbcStoreAutoConfiguration.class,
		afterName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
@ConditionalOnClass({ KafkaListener.class, LettuceConnectionFactory.class })
@ConditionalOnBooleanProperty(name = "idempotency.enabled", matchIfMissing = true)
@ConditionalOnBean(RedisConnectionFactory.class)
@EnableConfigurationProperties(IdempotencyProperties.class)
public final class IdempotencyRedisAutoConfiguration {

	private static final Log logger = LogFactory.getLog(IdempotencyRedisAutoConfiguration.class);

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnProperty(name = "idempotency.store.type", havingValue = "redis")
	static class RedisStoreConfiguration {

		@Bean
		@ConditionalOnMissingBean
		ProcessedMessageStore processedMessageStore(RedisConnectionFactory connectionFactory,
				IdempotencyProperties properties) {
			IdempotencyProperties.Redis redis = properties.store().redis();
			return new RedisProcessedMessageStore(new StringRedisTemplate(connectionFactory), redis.keyPrefix(),
					redis.lease(), redis.ttl());
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnProperty(name = "idempotency.store.type", havingValue = "jdbc", matchIfMissing = true)
	@ConditionalOnBooleanProperty(name = "idempotency.cache.enabled", matchIfMissing = true)
	@ConditionalOnBean(LettuceConnectionFactory.class)
	static class CacheConfiguration {

		@Bean
		@ConditionalOnMissingBean
		ProcessedKeyCache processedKeyCache(LettuceConnectionFactory connectionFactory,
				IdempotencyProperties properties, ObjectProvider<IdempotencyMetrics> metrics) {
			IdempotencyProperties.Cache cache = properties.cache();
			requireSeparateKeySpaces(cache.keyPrefix(), properties.store().redis().keyPrefix());
			if (cache.ttl().compareTo(properties.store().jdbc().retention()) > 0) {
				logger.warn("idempotency.cache.ttl (" + cache.ttl() + ") exceeds idempotency.store.jdbc.retention ("
						+ properties.store().jdbc().retention() + "): the cache would remember keys the database "
						+ "has deleted. Lower the TTL or raise the retention.");
			}
			SimpleAsyncTaskExecutor connector = new SimpleAsyncTaskExecutor("idempotency-redis-");
			connector.setDaemon(true);
			return new RedisProcessedKeyCache(connectionFactory, cache.keyPrefix(), cache.ttl(), cache.timeout(),
					cache.failureThreshold(), cache.openFor(), metrics.getIfAvailable(() -> IdempotencyMetrics.NONE),
					connector);
		}

		@Bean
		static ConsumerFactoryPostProcessor idempotencyConsumerFactoryPostProcessor() {
			return new ConsumerFactoryPostProcessor();
		}

		/**
		 * Refuse prefixes that let the cache and the Redis-only store share keys. One
		 * application never uses both, but instances of one group that switch between them
		 * (a rolling deploy) or services that share a scope meet on the same Redis: the
		 * cache would take the store's claims in progress for processed keys and skip
		 * records nobody applied, and the store would take cached keys for claims in
		 * progress. An application on the Redis-only store alone is not checked, so that it
		 * can keep the prefix of earlier versions.
		 */
		private static void requireSeparateKeySpaces(String cachePrefix, String storePrefix) {
			if (cachePrefix.startsWith(storePrefix) || storePrefix.startsWith(cachePrefix)) {
				throw new IllegalStateException("idempotency.cache.key-prefix ('" + cachePrefix
						+ "') and idempotency.store.redis.key-prefix ('" + storePrefix + "') overlap: the cache "
						+ "would read keys of the Redis-only store, such as claims in progress, as processed keys. "
						+ "Choose prefixes of which neither starts with the other.");
			}
		}

	}

}
