package dev.idempotency.internal.cache;

import dev.idempotency.cache.ProcessedKeyCache;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestMeters;
import dev.idempotency.test.TestRedis;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * An application with the cache on whose Redis is not running when it starts: it starts,
 * the database decides alone, and the cache is used once Redis comes up on its port.
 */
class RedisDownAtStartupIntegrationTests {

	private static final String TOPIC = "it-redis-down-at-startup";

	private static final String GROUP = "redis-down-at-startup";

	@Test
	void startsWithoutRedisAppliesEachRecordOnceAndUsesTheCacheWhenRedisComesUp() {
		TestInfrastructure.createTopic(TOPIC, 1);
		try (TestRedis redis = TestRedis.notRunning();
				ConfigurableApplicationContext context = assertTimeoutPreemptively(Duration.ofSeconds(90),
						() -> TestApplications.run(KeyEffectsApp.class, TestApplications.WITHOUT_JPA,
								redis.springProperty(), "idempotency.cache.enabled=true",
								"idempotency.cache.timeout=100ms", "idempotency.cache.open-for=300ms",
								"test.topic=" + TOPIC, "test.group=" + GROUP))) {
			assertThat(context.getBean(ProcessedKeyCache.class)).isInstanceOf(RedisProcessedKeyCache.class);
			String run = UUID.randomUUID().toString();
			for (int i = 0; i < 10; i++) {
				send(run + "-" + (i % 5));
			}
			awaitConsumed();
			for (int i = 0; i < 5; i++) {
				assertThat(effects(context, run + "-" + i)).as("effects of key %d", i).isEqualTo(1);
			}
			assertThat(count(context, "idempotency.messages", "outcome", "duplicate", "source", "store"))
				.isEqualTo(5.0);
			assertThat(count(context, "idempotency.messages", "outcome", "failed")).isZero();
			assertThat(count(context, "idempotency.cache.requests", "result", "error")).isPositive();
			assertThat(count(context, "idempotency.cache.requests", "result", "hit")).isZero();

			redis.restart();
			// a duplicate found in the database writes its key to the cache once it answers;
			// the next copy is then a cache hit
			String key = run + "-0";
			await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).until(() -> {
				send(key);
				awaitConsumed();
				return count(context, "idempotency.cache.requests", "result", "hit") > 0;
			});
			assertThat(count(context, "idempotency.messages", "outcome", "duplicate", "source", "cache")).isPositive();
			assertThat(effects(context, key)).isEqualTo(1);
		}
	}

	private static void send(String key) {
		TestKafka.send(TOPIC, 0, key, Map.of(TestApplication.KEY_HEADER, key));
	}

	private static void awaitConsumed() {
		TestKafka.awaitCommitted(GROUP, new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
	}

	private static int effects(ConfigurableApplicationContext context, String key) {
		return context.getBean(TestEffects.class).count(GROUP, key);
	}

	private static double count(ConfigurableApplicationContext context, String name, String... tags) {
		return TestMeters.count(context, name, tags);
	}

}
