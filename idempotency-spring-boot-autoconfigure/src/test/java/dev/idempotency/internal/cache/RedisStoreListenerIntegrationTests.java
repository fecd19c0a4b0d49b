package dev.idempotency.internal.cache;


import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestRedis;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * An application without a database, on the Redis-only store: copies of each message on
 * three partitions, consumed concurrently, invoke the listener once per key.
 */
class RedisStoreListenerIntegrationTests {

	private static final String TOPIC = "it-redis-store";

	private static final int PARTITIONS = 3;

	@Test
	void invokesTheListenerOncePerKeyWithoutADatabase() {
		TestInfrastructure.createTopic(TOPIC, PARTITIONS);
		try (TestRedis redis = TestRedis.start();
				ConfigurableApplicationContext context = TestApplications.run(App.class, redis.springProperty(),
						"idempotency.store.type=redis", "spring.kafka.listener.concurrency=3",
						TestApplications.WITHOUT_DATABASE)) {
			String run = UUID.randomUUID().toString();
			int keys = 300;
			for (int key = 0; key < keys; key++) {
				for (int partition = 0; partition < PARTITIONS; partition++) {
					ProducerRecord<String, String> record = new ProducerRecord<>(TOPIC, partition, null,
							run + "-" + key);
					record.headers().add("X-Idempotency-Key", (run + "-" + key).getBytes());
					TestKafka.sendAsync(record);
				}
			}
			TestKafka.flush();
			await().atMost(Duration.ofSeconds(60))
				.until(() -> IntStream.range(0, PARTITIONS)
					.mapToLong((p) -> Math.max(0, TestKafka.committedOffset("redis-store", new TopicPartition(TOPIC, p))))
					.sum() == (long) keys * PARTITIONS);
			Invocations invocations = context.getBean(Invocations.class);
			for (int key = 0; key < keys; key++) {
				assertThat(invocations.of(run + "-" + key)).as("invocations of key %d", key).isEqualTo(1);
			}
		}
	}

	@Test
	void recordWhoseKeyAnotherConsumerLeasedIsAppliedOnceTheLeaseExpires() {
		TestInfrastructure.createTopic(TOPIC + "-leased", 1);
		try (TestRedis redis = TestRedis.start();
				ConfigurableApplicationContext context = TestApplications.run(App.class, redis.springProperty(),
						"idempotency.store.type=redis", "idempotency.store.redis.lease=6s",
						"idempotency.infrastructure-retry.initial-interval=200ms",
						"idempotency.infrastructure-retry.max-interval=500ms", TestApplications.WITHOUT_DATABASE)) {
			String key = UUID.randomUUID().toString();
			// another consumer claimed the key and went silent: its lease runs for 6 s, far
			// longer than the ten attempts without pause of the default error handler
			ProcessedMessageStore store = context.getBean(ProcessedMessageStore.class);
			assertThat(store.claim(new ProcessedMessage("redis-store-leased", key, TOPIC, 0, 0)).isNew()).isTrue();
			TestKafka.send(TOPIC + "-leased", 0, key, Map.of("X-Idempotency-Key", key));
			TestKafka.awaitCommitted("redis-store-leased", new TopicPartition(TOPIC + "-leased", 0),
					Duration.ofSeconds(60));
			assertThat(context.getBean(Invocations.class).of(key)).isEqualTo(1);
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Invocations invocations() {
			return new Invocations();
		}

	}

	static class Invocations {

		private final Map<String, Integer> counts = new ConcurrentHashMap<>();

		@KafkaListener(id = "redis-store", topics = TOPIC, groupId = "redis-store")
		@Idempotent
		public void on(String key) {
			this.counts.merge(key, 1, Integer::sum);
		}

		@KafkaListener(id = "redis-store-leased", topics = TOPIC + "-leased", groupId = "redis-store-leased")
		@Idempotent
		public void leased(String key) {
			this.counts.merge(key, 1, Integer::sum);
		}

		public int of(String key) {
			return this.counts.getOrDefault(key, 0);
		}

	}

}
