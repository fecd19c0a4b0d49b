package dev.idempotency.internal.cache;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestRedis;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch listener on the Redis-only store, in an application without a database, that
 * names a record of its batch as failed: no transaction rolled back the work on the records
 * before it, so they are kept as applied, not run again.
 */
class RedisStoreBatchFailureIntegrationTests {

	private static final String TOPIC = "it-redis-store-batch-failure";

	@Test
	void recordsBeforeTheFailedOneAreAppliedOnce() {
		TestInfrastructure.createTopic(TOPIC, 1);
		String run = UUID.randomUUID().toString();
		for (int i = 0; i < 5; i++) {
			TestKafka.send(TOPIC, 0, run + "-" + i, Map.of("X-Idempotency-Key", run + "-" + i));
		}
		try (TestRedis redis = TestRedis.start();
				ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_DATABASE,
						"spring.data.redis.url=redis://127.0.0.1:" + redis.port(), "idempotency.store.type=redis")) {
			Listener listener = context.getBean(Listener.class);
			listener.failOnce(run + "-2");
			context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("redis-store-batch").start();
			TestKafka.awaitCommitted("redis-store-batch", new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
			assertThat(listener.recovered()).isEmpty();
			for (int i = 0; i < 5; i++) {
				assertThat(listener.applications(run + "-" + i)).as("applications of record %d", i).isEqualTo(1);
			}
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener() {
			return new Listener();
		}

		@Bean
		DefaultErrorHandler errorHandler(Listener listener) {
			return new DefaultErrorHandler(listener::recover, new FixedBackOff(100, 3));
		}

	}

	static class Listener {

		private final Map<String, Integer> applications = new ConcurrentHashMap<>();

		private final List<Object> recovered = new CopyOnWriteArrayList<>();

		private final AtomicBoolean failing = new AtomicBoolean();

		private volatile String failOnce;

		void failOnce(String value) {
			this.failOnce = value;
			this.failing.set(true);
		}

		int applications(String value) {
			return this.applications.getOrDefault(value, 0);
		}

		List<Object> recovered() {
			return this.recovered;
		}

		void recover(ConsumerRecord<?, ?> record, Exception ex) {
			this.recovered.add(record.value());
		}

		@KafkaListener(id = "redis-store-batch", topics = TOPIC, groupId = "redis-store-batch", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void on(List<ConsumerRecord<String, String>> records) {
			for (int i = 0; i < records.size(); i++) {
				String value = records.get(i).value();
				if (value.equals(this.failOnce) && this.failing.compareAndSet(true, false)) {
					throw new BatchListenerFailedException("Fails once", i);
				}
				// an effect outside any database: nothing rolls it back
				this.applications.merge(value, 1, Integer::sum);
			}
		}

	}

}
