package dev.idempotency.internal.cache;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestProxy;
import dev.idempotency.test.TestRedis;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.Acknowledgment;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Redis out of reach for a few seconds just as an {@code @Idempotent} listener on the
 * Redis-only store returns: the claims of the records it applied are still completed, so
 * that a later copy of a message is not applied again.
 */
class RedisStoreBlipIntegrationTests {

	private static final String RECORDS = "it-redis-store-blip-records";

	private static final String BATCHES = "it-redis-store-blip-batches";

	@BeforeAll
	static void createTopics() {
		TestInfrastructure.createTopic(RECORDS, 1);
		TestInfrastructure.createTopic(BATCHES, 1);
	}

	@Test
	void aCompletionThatMeetsABlipIsCompletedOnceRedisIsBack() {
		try (TestRedis redis = TestRedis.start(); TestProxy proxy = new TestProxy("127.0.0.1", redis.port());
				ConfigurableApplicationContext context = run(proxy)) {
			Listeners listeners = context.getBean(Listeners.class);
			String key = UUID.randomUUID().toString();
			listeners.cutAfter(key, proxy);
			TestKafka.send(RECORDS, 0, key, Map.of("X-Idempotency-Key", key));
			TestKafka.awaitCommitted("redis-blip-records", new TopicPartition(RECORDS, 0), Duration.ofSeconds(60));
			// a copy of the message, once Redis is back and the lease (5 s) has ended
			sleep(5000);
			TestKafka.send(RECORDS, 0, key, Map.of("X-Idempotency-Key", key));
			TestKafka.awaitCommitted("redis-blip-records", new TopicPartition(RECORDS, 0), Duration.ofSeconds(60));
			assertThat(listeners.applications(key)).isEqualTo(1);
		}
	}

	@Test
	void recordsBeforeABatchNackAreCompletedWhenTheReleaseMeetsABlip() {
		String run = UUID.randomUUID().toString();
		for (int i = 0; i < 5; i++) {
			TestKafka.send(BATCHES, 0, run + "-" + i, Map.of("X-Idempotency-Key", run + "-" + i));
		}
		try (TestRedis redis = TestRedis.start(); TestProxy proxy = new TestProxy("127.0.0.1", redis.port());
				ConfigurableApplicationContext context = run(proxy)) {
			Listeners listeners = context.getBean(Listeners.class);
			listeners.nackAndCut(run + "-0", proxy);
			context.getBean(org.springframework.kafka.config.KafkaListenerEndpointRegistry.class)
				.getListenerContainer("redis-blip-batches")
				.start();
			TestKafka.awaitCommitted("redis-blip-batches", new TopicPartition(BATCHES, 0), Duration.ofSeconds(90));
			for (int i = 0; i < 5; i++) {
				assertThat(listeners.applications(run + "-" + i)).as("applications of record %d", i).isEqualTo(1);
			}
		}
	}

	private static ConfigurableApplicationContext run(TestProxy proxy) {
		return TestApplications.run(App.class, TestApplications.WITHOUT_DATABASE,
				"spring.data.redis.url=redis://127.0.0.1:" + proxy.port(),
				"idempotency.store.type=redis", "spring.data.redis.timeout=1s", "idempotency.store.redis.lease=5s",
				"idempotency.infrastructure-retry.initial-interval=200ms",
				"idempotency.infrastructure-retry.max-interval=500ms", "spring.kafka.listener.ack-mode=manual");
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	// Redis is out of reach for 3 s from now
	private static void cutFor3Seconds(TestProxy proxy) {
		proxy.cut();
		Thread restore = new Thread(() -> {
			sleep(3000);
			proxy.restore();
		});
		restore.setDaemon(true);
		restore.start();
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listeners listeners() {
			return new Listeners();
		}

	}

	static class Listeners {

		private final Map<String, Integer> applications = new ConcurrentHashMap<>();

		private final AtomicBoolean once = new AtomicBoolean();

		private volatile String trigger;

		private volatile TestProxy proxy;

		void cutAfter(String key, TestProxy proxy) {
			arm(key, proxy);
		}

		void nackAndCut(String firstValue, TestProxy proxy) {
			arm(firstValue, proxy);
		}

		private void arm(String value, TestProxy proxy) {
			this.trigger = value;
			this.proxy = proxy;
			this.once.set(true);
		}

		int applications(String value) {
			return this.applications.getOrDefault(value, 0);
		}

		@KafkaListener(id = "redis-blip-records", topics = RECORDS, groupId = "redis-blip-records")
		@Idempotent
		public void record(String value, Acknowledgment acknowledgment) {
			this.applications.merge(value, 1, Integer::sum);
			if (value.equals(this.trigger) && this.once.compareAndSet(true, false)) {
				cutFor3Seconds(this.proxy);
			}
			acknowledgment.acknowledge();
		}

		@KafkaListener(id = "redis-blip-batches", topics = BATCHES, groupId = "redis-blip-batches", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void batch(List<ConsumerRecord<String, String>> records, Acknowledgment acknowledgment) {
			if (records.size() == 5 && records.get(0).value().equals(this.trigger)
					&& this.once.compareAndSet(true, false)) {
				this.applications.merge(records.get(0).value(), 1, Integer::sum);
				this.applications.merge(records.get(1).value(), 1, Integer::sum);
				// the records from index 2 on are handed back, as Redis goes out of reach
				acknowledgment.nack(2, Duration.ofMillis(100));
				cutFor3Seconds(this.proxy);
				return;
			}
			records.forEach((record) -> this.applications.merge(record.value(), 1, Integer::sum));
			acknowledgment.acknowledge();
		}

	}

}
