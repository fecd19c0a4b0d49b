package dev.idempotency.internal.cache;

import dev.idempotency.cache.ProcessedKeyCache;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.autoconfigure.IdempotencyRedisAutoConfiguration;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestRedis;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The cache and the Redis-only store, each with its default settings, on one real Redis
 * (as during a rolling switch of {@code idempotency.store.type} in one consumer group):
 * neither reads the other's keys.
 */
class RedisKeySpacesIntegrationTests {

	private static final String TOPIC = "it-key-spaces";

	private static final String GROUP = "key-spaces";

	private static final TestRedis redis = TestRedis.start();

	@RegisterExtension
	static final AfterAllCallback stopRedis = (extension) -> redis.close();

	private static final ApplicationContextRunner redisApp = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(IdempotencyRedisAutoConfiguration.class))
		.withBean(LettuceConnectionFactory.class,
				() -> new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redis.port())));

	@Test
	void theCacheDoesNotTakeAKeyInProgressInTheStoreForAProcessedOne() {
		String key = UUID.randomUUID().toString();
		redisApp.withPropertyValues("idempotency.store.type=redis").run((storeApp) -> redisApp.run((cacheApp) -> {
			RedisProcessedMessageStore store = storeApp.getBean(RedisProcessedMessageStore.class);
			ProcessedKeyCache cache = cacheApp.getBean(ProcessedKeyCache.class);
			assertThat(store.claim(message(key)).isNew()).isTrue();
			assertThat(store.isInProgress(GROUP, key)).isTrue();
			awaitAnswering(cache);
			assertThat(cache.isProcessed(GROUP, key)).isFalse();
			assertThat(cache.areProcessed(GROUP, List.of(key))).containsExactly(false);
		}));
	}

	@Test
	void theStoreDoesNotTakeACachedKeyForAClaimInProgress() {
		String key = UUID.randomUUID().toString();
		redisApp.withPropertyValues("idempotency.store.type=redis").run((storeApp) -> redisApp.run((cacheApp) -> {
			RedisProcessedMessageStore store = storeApp.getBean(RedisProcessedMessageStore.class);
			ProcessedKeyCache cache = cacheApp.getBean(ProcessedKeyCache.class);
			awaitAnswering(cache);
			cache.markProcessed(GROUP, key);
			await().atMost(Duration.ofSeconds(10)).until(() -> cache.isProcessed(GROUP, key));
			Claim claim = store.claim(message(key));
			assertThat(claim.isNew()).isTrue();
			assertThat(claim.complete()).isTrue();
		}));
	}

	@Test
	void aCachedListenerAppliesARecordWhoseKeyIsInProgressInTheStore() {
		TestInfrastructure.createTopic(TOPIC, 1);
		String key = UUID.randomUUID().toString();
		redisApp.withPropertyValues("idempotency.store.type=redis").run((storeApp) -> {
			RedisProcessedMessageStore store = storeApp.getBean(RedisProcessedMessageStore.class);
			assertThat(store.claim(message(key)).isNew()).isTrue();
			try (ConfigurableApplicationContext app = TestApplications.run(KeyEffectsApp.class,
					TestApplications.WITHOUT_JPA, redis.springProperty(), "idempotency.cache.enabled=true",
					"test.topic=" + TOPIC, "test.group=" + GROUP)) {
				awaitAnswering(app.getBean(ProcessedKeyCache.class));
				TestKafka.send(TOPIC, 0, key, Map.of(TestApplication.KEY_HEADER, key));
				TestKafka.awaitCommitted(GROUP, new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
				assertThat(app.getBean(TestEffects.class).count(GROUP, key)).isEqualTo(1);
			}
		});
	}

	private static ProcessedMessage message(String key) {
		return new ProcessedMessage(GROUP, key, TOPIC, 0, 0);
	}

	/**
	 * Wait until the cache is connected: it connects in the background and, until then,
	 * answers every lookup with a miss.
	 */
	private static void awaitAnswering(ProcessedKeyCache cache) {
		String probe = "probe-" + UUID.randomUUID();
		await().atMost(Duration.ofSeconds(10)).until(() -> {
			cache.markProcessed("probe", probe);
			return cache.isProcessed("probe", probe);
		});
	}

}
