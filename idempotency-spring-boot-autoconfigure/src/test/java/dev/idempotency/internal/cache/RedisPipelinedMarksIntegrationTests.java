package dev.idempotency.internal.cache;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import dev.idempotency.autoconfigure.IdempotencyRedisAutoConfiguration;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.metrics.CacheResult;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.test.TestRedis;
import io.lettuce.core.api.async.RedisAsyncCommands;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * The cache's writes of processed keys, pipelined in batches, against a real Redis that
 * is stopped and started again. Redis is checked through a connection of the test's own,
 * never through the cache, whose lookups send the queued keys first.
 */
class RedisPipelinedMarksIntegrationTests {

	private static TestRedis redis;

	private static LettuceConnectionFactory checker;

	private static StringRedisTemplate redisTemplate;

	@BeforeAll
	static void start() {
		redis = TestRedis.start();
		checker = factory(Duration.ofSeconds(10));
		redisTemplate = new StringRedisTemplate(checker);
	}

	@AfterAll
	static void stop() {
		checker.destroy();
		redis.close();
	}

	@Test
	void marksWithoutALaterLookupReachRedisThroughThePeriodicFlush() {
		LettuceConnectionFactory factory = factory(Duration.ofSeconds(10));
		String prefix = prefix();
		try (RedisProcessedKeyCache cache = cache(factory, prefix, 5, IdempotencyMetrics.NONE)) {
			awaitAnswering(cache);
			List<String> keys = List.of("a", "b", "c");
			// fewer than a batch and no lookup after them: only the periodic flush sends them
			keys.forEach((key) -> cache.markProcessed("scope", key));
			await().atMost(Duration.ofSeconds(2))
				.pollInterval(Duration.ofMillis(10))
				.until(() -> existing(prefix, "scope", keys) == keys.size());
		}
		finally {
			factory.destroy();
		}
	}

	@Test
	void aBurstOfMarksFromSeveralThreadsReachesRedisInBatches() throws Exception {
		LettuceConnectionFactory factory = factory(Duration.ofSeconds(10));
		String prefix = prefix();
		int threads = 4;
		int perThread = 10 * RedisMarkPipeline.BATCH_SIZE / threads;
		List<String> keys = IntStream.range(0, threads * perThread).mapToObj((i) -> "key-" + i).toList();
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try (RedisProcessedKeyCache cache = cache(factory, prefix, 5, IdempotencyMetrics.NONE)) {
			awaitAnswering(cache);
			CountDownLatch go = new CountDownLatch(1);
			long readsBefore = redisReads();
			List<Future<?>> marking = IntStream.range(0, threads).<Future<?>>mapToObj((t) -> pool.submit(() -> {
				go.await();
				keys.subList(t * perThread, (t + 1) * perThread).forEach((key) -> cache.markProcessed("scope", key));
				return null;
			})).toList();
			go.countDown();
			for (Future<?> done : marking) {
				done.get();
			}
			await().atMost(Duration.ofSeconds(5)).until(() -> cache.outstandingMarks() == 0);
			// Redis read the keys in a few batches, not in one read per key (the second
			// INFO's own read included)
			assertThat(redisReads() - readsBefore).isLessThan(keys.size() / 10);
			assertThat(existing(prefix, "scope", keys)).isEqualTo(keys.size());
		}
		finally {
			pool.shutdownNow();
			factory.destroy();
		}
	}

	@Test
	void marksNeitherThrowNorWaitWhileRedisIsDownAndAreWrittenAgainWhenItIsBack() {
		// marks queued while Redis is down fail after the client's command timeout
		LettuceConnectionFactory factory = factory(Duration.ofMillis(300));
		String prefix = prefix();
		BreakerProbe breaker = new BreakerProbe();
		try (RedisProcessedKeyCache cache = cache(factory, prefix, 3, breaker)) {
			awaitAnswering(cache);
			redis.stop();
			try {
				assertTimeoutPreemptively(Duration.ofSeconds(2), () -> {
					for (int i = 0; i < 2000; i++) {
						cache.markProcessed("down", "key-" + i);
					}
				});
				// failed writes alone open the breaker
				await().atMost(Duration.ofSeconds(10)).until(breaker::isOpen);
				await().atMost(Duration.ofSeconds(10)).until(() -> cache.outstandingMarks() == 0);
			}
			finally {
				redis.restart();
			}
			// while the breaker is open, nothing is written
			cache.markProcessed("open", "skipped");
			assertThat(cache.outstandingMarks()).isZero();
			// a lookup probes Redis once it is reachable again and closes the breaker
			await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
				cache.isProcessed("probe", "probe");
				return !breaker.isOpen();
			});
			List<String> after = List.of("x", "y");
			after.forEach((key) -> cache.markProcessed("up", key));
			await().atMost(Duration.ofSeconds(2))
				.pollInterval(Duration.ofMillis(10))
				.until(() -> existing(prefix, "up", after) == after.size());
			assertThat(existing(prefix, "open", List.of("skipped"))).isZero();
		}
		finally {
			factory.destroy();
		}
	}

	@Test
	void dropsMarksBeyondTheBoundWhileRedisCannotTakeThem() {
		// a long command timeout and a breaker that never opens: the client keeps every
		// write sent while Redis is down and sends it once Redis is back
		LettuceConnectionFactory factory = factory(Duration.ofSeconds(60));
		String prefix = prefix();
		int marks = RedisMarkPipeline.MAX_OUTSTANDING + 2000;
		try (RedisProcessedKeyCache cache = cache(factory, prefix, Integer.MAX_VALUE, IdempotencyMetrics.NONE)) {
			awaitAnswering(cache);
			redis.stop();
			try {
				await().atMost(Duration.ofSeconds(10)).until(() -> !connected(factory));
				for (int i = 0; i < marks; i++) {
					cache.markProcessed("bounded", "key-" + i);
				}
				assertThat(cache.outstandingMarks()).isEqualTo(RedisMarkPipeline.MAX_OUTSTANDING);
			}
			finally {
				redis.restart();
			}
			await().atMost(Duration.ofSeconds(60)).until(() -> cache.outstandingMarks() == 0);
			assertThat(redisTemplate.keys(prefix + "*")).hasSize(RedisMarkPipeline.MAX_OUTSTANDING);
		}
		finally {
			factory.destroy();
		}
	}

	@Test
	void theAutoConfiguredCacheStopsItsFlushWithTheContext() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(IdempotencyRedisAutoConfiguration.class))
			.withBean(LettuceConnectionFactory.class,
					() -> new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redis.port())))
			.run((context) -> {
				RedisProcessedKeyCache cache = (RedisProcessedKeyCache) context.getBean(ProcessedKeyCache.class);
				assertThat(cache.isClosed()).isFalse();
				context.close();
				assertThat(cache.isClosed()).isTrue();
			});
	}

	private static RedisProcessedKeyCache cache(LettuceConnectionFactory factory, String prefix, int failureThreshold,
			IdempotencyMetrics metrics) {
		return new RedisProcessedKeyCache(factory, prefix, Duration.ofMinutes(10), Duration.ofMillis(100),
				failureThreshold, Duration.ofMillis(300), metrics, (task) -> {
					Thread thread = new Thread(task, "test-redis-connect");
					thread.setDaemon(true);
					thread.start();
				});
	}

	private static LettuceConnectionFactory factory(Duration commandTimeout) {
		LettuceConnectionFactory factory = new LettuceConnectionFactory(
				new RedisStandaloneConfiguration("127.0.0.1", redis.port()),
				LettuceClientConfiguration.builder().commandTimeout(commandTimeout).build());
		factory.afterPropertiesSet();
		factory.start();
		return factory;
	}

	private static String prefix() {
		return "it-pipelined:" + UUID.randomUUID() + ":";
	}

	/**
	 * Wait until the cache is connected: until then it neither reads nor writes.
	 */
	private static void awaitAnswering(ProcessedKeyCache cache) {
		String probe = "probe-" + UUID.randomUUID();
		await().atMost(Duration.ofSeconds(10)).until(() -> {
			cache.markProcessed("probe", probe);
			return cache.isProcessed("probe", probe);
		});
	}

	@SuppressWarnings("unchecked")
	private static boolean connected(LettuceConnectionFactory factory) {
		try (LettuceConnection connection = (LettuceConnection) factory.getConnection()) {
			return ((RedisAsyncCommands<byte[], byte[]>) connection.getNativeConnection()).getStatefulConnection()
				.isOpen();
		}
	}

	private static long existing(String prefix, String scope, List<String> keys) {
		RedisKeys redisKeys = new RedisKeys(prefix);
		Long count = redisTemplate.countExistingKeys(keys.stream().map((key) -> redisKeys.of(scope, key)).toList());
		return (count != null) ? count : 0;
	}

	/**
	 * Reads of client requests by the Redis server, over all connections.
	 */
	private static long redisReads() {
		Properties stats = redisTemplate
			.execute((RedisCallback<Properties>) (connection) -> connection.serverCommands().info("stats"));
		return Long.parseLong(stats.getProperty("total_reads_processed"));
	}

	/**
	 * Sees the breaker through the gauge the cache registers.
	 */
	private static final class BreakerProbe implements IdempotencyMetrics {

		private volatile BooleanSupplier open = () -> false;

		boolean isOpen() {
			return this.open.getAsBoolean();
		}

		@Override
		public ListenerMetrics listener(String listener, String store) {
			return ListenerMetrics.NONE;
		}

		@Override
		public void cacheRequests(CacheResult result, int count) {
		}

		@Override
		public void cacheBreaker(BooleanSupplier open) {
			this.open = open;
		}

		@Override
		public void cleanupDeleted(long count) {
		}

	}

}
