package dev.idempotency.internal.cache;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestRedis;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The Redis write-through cache in front of the JDBC store, with a real Kafka broker, a
 * real PostgreSQL and a real Redis that is stopped and started during a run.
 */
class RedisCacheIntegrationTests {

	private static final String TOPIC = "it-cache";

	private static final String GROUP = "cache";

	private static final TestRedis redis = TestRedis.start();

	// after-all callbacks run in reverse order: Redis stops after the application closed
	@RegisterExtension
	@Order(1)
	static final AfterAllCallback stopRedis = (extension) -> redis.close();

	@RegisterExtension
	@Order(2)
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, redis.springProperty(), "idempotency.cache.enabled=true",
				"idempotency.cache.open-for=300ms", "idempotency.cache.timeout=100ms");

	private static StringRedisTemplate redisTemplate;

	@BeforeAll
	static void redisTemplate() {
		redisTemplate = app.bean(StringRedisTemplate.class);
	}

	@Test
	void aCacheHitSkipsTheListenerWithoutOpeningATransaction() {
		String key = UUID.randomUUID().toString();
		send(key);
		awaitConsumed();
		await().atMost(Duration.ofSeconds(10)).until(() -> cached(key));
		int transactions = app.bean(CountingTransactionManager.class).begun();
		double hits = count("idempotency.messages", "outcome", "duplicate", "source", "cache");
		send(key);
		awaitConsumed();
		assertThat(app.bean(CountingTransactionManager.class).begun()).isEqualTo(transactions);
		assertThat(count("idempotency.messages", "outcome", "duplicate", "source", "cache") - hits).isEqualTo(1.0);
		assertThat(effects(key)).isEqualTo(1);
	}

	@Test
	void asksTheCacheAboutAWholePollInOneCommand() {
		String run = UUID.randomUUID().toString();
		List<String> keys = IntStream.range(0, 20).mapToObj((i) -> run + "-" + i).toList();
		keys.forEach(RedisCacheIntegrationTests::send);
		awaitConsumed();
		await().atMost(Duration.ofSeconds(10)).until(() -> keys.stream().allMatch(RedisCacheIntegrationTests::cached));
		MessageListenerContainer container = app.container(GROUP);
		container.stop();
		keys.forEach(RedisCacheIntegrationTests::send);
		long mgets = redisCalls("mget");
		long exists = redisCalls("exists");
		double hits = count("idempotency.messages", "outcome", "duplicate", "source", "cache");
		container.start();
		awaitConsumed();
		assertThat(count("idempotency.messages", "outcome", "duplicate", "source", "cache") - hits).isEqualTo(20.0);
		// one MGET per poll (the twenty records may come in more than one poll), not one
		// lookup per record
		assertThat(redisCalls("mget") - mgets).isBetween(1L, 5L);
		assertThat(redisCalls("exists") - exists).isLessThan(5L);
	}

	@Test
	void aRolledBackTransactionNeverReachesTheCache() {
		String key = UUID.randomUUID().toString();
		Effects effects = app.bean(Effects.class);
		effects.failAlways(key);
		send(key);
		awaitConsumed();
		assertThat(effects.attempts(key)).isEqualTo(2);
		assertThat(effects.sawOwnKeyInCache()).isFalse();
		assertThat(cached(key)).isFalse();
		assertThat(effects(key)).isZero();
	}

	@Test
	void aDuplicateFoundInTheDatabaseRefreshesTheCache() {
		String key = UUID.randomUUID().toString();
		send(key);
		awaitConsumed();
		await().atMost(Duration.ofSeconds(10)).until(() -> cached(key));
		redisTemplate.delete(redisKey(key));
		send(key);
		awaitConsumed();
		await().atMost(Duration.ofSeconds(10)).until(() -> cached(key));
		assertThat(effects(key)).isEqualTo(1);
	}

	@Test
	void keepsProcessingExactlyOnceWhileRedisIsDownAndUsesItAgainWhenItIsBack() throws Exception {
		double errorsBefore = count("idempotency.cache.requests", "result", "error");
		double failedBefore = count("idempotency.messages", "outcome", "failed");
		String run = UUID.randomUUID().toString();
		int keys = 150;
		// each key twice, sent at a steady pace while Redis goes down and comes back
		Thread producer = new Thread(() -> {
			for (int i = 0; i < keys * 2; i++) {
				send(run + "-" + (i % keys));
				sleep(10);
			}
		});
		producer.start();
		sleep(800);
		redis.stop();
		sleep(1500);
		redis.restart();
		producer.join();
		awaitConsumed();
		for (int i = 0; i < keys; i++) {
			assertThat(effects(run + "-" + i)).as("effects of key %d", i).isEqualTo(1);
		}
		assertThat(count("idempotency.messages", "outcome", "failed")).isEqualTo(failedBefore);
		assertThat(count("idempotency.cache.requests", "result", "error")).isGreaterThan(errorsBefore);
		// recovered: a key processed now is cached again and its duplicate is a cache hit
		String after = run + "-after";
		send(after);
		awaitConsumed();
		await().atMost(Duration.ofSeconds(20)).until(() -> cached(after));
		double hits = count("idempotency.cache.requests", "result", "hit");
		send(after);
		awaitConsumed();
		assertThat(count("idempotency.cache.requests", "result", "hit")).isGreaterThan(hits);
		assertThat(app.bean(MeterRegistry.class).get("idempotency.cache.breaker.open").gauge().value())
			.isZero();
		assertThat(effects(after)).isEqualTo(1);
	}

	private static void send(String key) {
		app.send(TOPIC, key, key);
	}

	private static void awaitConsumed() {
		TestKafka.awaitCommitted(GROUP, new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
	}

	private static long redisCalls(String command) {
		Properties stats = redisTemplate.execute((RedisCallback<Properties>) (connection) -> connection.serverCommands()
			.info("commandstats"));
		String line = stats.getProperty("cmdstat_" + command);
		if (line == null) {
			return 0;
		}
		// calls=12,usec=...
		return Long.parseLong(line.substring(line.indexOf("calls=") + 6, line.indexOf(',')));
	}

	private static boolean cached(String key) {
		try {
			return Boolean.TRUE.equals(redisTemplate.hasKey(redisKey(key)));
		}
		catch (RuntimeException ex) {
			return false;
		}
	}

	private static String redisKey(String key) {
		return new RedisKeys("idempotency:cache:").of(GROUP, key);
	}

	private static int effects(String key) {
		return app.bean(TestEffects.class).count(GROUP, key);
	}

	private static double count(String name, String... tags) {
		return app.count(name, tags);
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		CountingTransactionManager transactionManager(DataSource dataSource) {
			return new CountingTransactionManager(dataSource);
		}

		@Bean
		TestEffects testEffects(JdbcTemplate jdbc) {
			return new TestEffects(jdbc, "cache_effects");
		}

		@Bean
		Effects effects(TestEffects effects, StringRedisTemplate redis) {
			return new Effects(effects, redis);
		}

		@Bean
		DefaultErrorHandler errorHandler() {
			return new DefaultErrorHandler(new FixedBackOff(0, 1));
		}

	}

	static class CountingTransactionManager extends DataSourceTransactionManager {

		private static final long serialVersionUID = 1L;

		private final AtomicInteger begun = new AtomicInteger();

		CountingTransactionManager(DataSource dataSource) {
			super(dataSource);
		}

		@Override
		protected void doBegin(Object transaction, TransactionDefinition definition) {
			this.begun.incrementAndGet();
			super.doBegin(transaction, definition);
		}

		int begun() {
			return this.begun.get();
		}

	}

	static class Effects {

		private final Set<String> failAlways = ConcurrentHashMap.newKeySet();

		private final Map<String, Integer> attempts = new ConcurrentHashMap<>();

		private volatile boolean sawOwnKeyInCache;

		private final TestEffects effects;

		private final StringRedisTemplate redis;

		Effects(TestEffects effects, StringRedisTemplate redis) {
			this.effects = effects;
			this.redis = redis;
		}

		@KafkaListener(id = GROUP, topics = TOPIC, groupId = GROUP)
		@Idempotent
		public void apply(String key) {
			this.attempts.merge(key, 1, Integer::sum);
			this.effects.add(GROUP, key);
			if (this.failAlways.contains(key)) {
				// inside the transaction, after the claim: the key must not be in the cache yet
				if (Boolean.TRUE.equals(this.redis.hasKey(redisKey(key)))) {
					this.sawOwnKeyInCache = true;
				}
				throw new IllegalStateException("Simulated failure");
			}
		}

		public void failAlways(String key) {
			this.failAlways.add(key);
		}

		public int attempts(String key) {
			return this.attempts.getOrDefault(key, 0);
		}

		public boolean sawOwnKeyInCache() {
			return this.sawOwnKeyInCache;
		}

	}

}
