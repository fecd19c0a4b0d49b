package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestMeters;
import dev.idempotency.test.TestRedis;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Payload fingerprints under {@code idempotency.lease.fingerprint-mismatch=warn} and stored
 * results in the transactional mode, with the Redis cache on: the cache knows the keys
 * once they are processed, and must not skip the duplicates of these listeners, whose
 * rows the claim reads.
 */
class TransactionalFingerprintCacheIntegrationTests {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private static TestRedis redis;

	private static ConfigurableApplicationContext context;

	@BeforeAll
	static void start() {
		for (String topic : List.of("it-txc-fingerprint", "it-txc-result", "it-txc-replies")) {
			TestInfrastructure.createTopic(topic, 1);
		}
		redis = TestRedis.start();
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA, redis.springProperty(),
				"idempotency.cache.enabled=true", "idempotency.lease.fingerprint-mismatch=warn");
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
		redis.close();
	}

	@Test
	void recordWithAKnownKeyAndAnotherPayloadIsCountedAndSkipped() {
		Probe probe = context.getBean(Probe.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send("it-txc-fingerprint", 0, "10 EUR note=first", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("txc-fingerprint", new TopicPartition("it-txc-fingerprint", 0), TIMEOUT);
		cache("txc-fingerprint", key);
		// same amount, another note: the expression fingerprints the amount only
		TestKafka.send("it-txc-fingerprint", 0, "10 EUR note=again", Map.of("X-Idempotency-Key", key));
		TestKafka.send("it-txc-fingerprint", 0, "99 EUR note=first", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("txc-fingerprint", new TopicPartition("it-txc-fingerprint", 0), TIMEOUT);
		assertThat(probe.values).containsExactly("10 EUR note=first");
		assertThat(probe.recovered).isEmpty();
		assertThat(TestMeters.count(context, "idempotency.fingerprint.mismatches", "listener",
				"Listeners.fingerprinted", "policy", "warn"))
			.isEqualTo(1);
		assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Listeners.fingerprinted",
				"outcome", "duplicate", "source", "store"))
			.isEqualTo(1);
		assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Listeners.fingerprinted",
				"outcome", "rejected"))
			.isEqualTo(1);
	}

	@Test
	void duplicateRepliesTheStoredResult() {
		Probe probe = context.getBean(Probe.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send("it-txc-result", 0, "order-1", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("txc-result", new TopicPartition("it-txc-result", 0), TIMEOUT);
		cache("txc-result", key);
		TestKafka.send("it-txc-result", 0, "order-1", Map.of("X-Idempotency-Key", key));
		await().atMost(TIMEOUT).until(() -> probe.replies.size() >= 2);
		assertThat(probe.receipts).hasSize(1);
		assertThat(probe.replies).hasSize(2).containsOnly(probe.receipts.get(0));
		assertThat(TestMeters.count(context, "idempotency.messages", "listener", "Listeners.result", "outcome",
				"duplicate", "source", "cache"))
			.isZero();
	}

	// the cache knows the key before its duplicate arrives (a write right after the
	// connection opened may have been dropped, as the cache allows)
	private static void cache(String scope, String key) {
		ProcessedKeyCache cache = context.getBean(ProcessedKeyCache.class);
		await().atMost(TIMEOUT).until(() -> {
			if (!cached(scope, key)) {
				cache.markProcessed(scope, key);
			}
			return cached(scope, key);
		});
	}

	private static boolean cached(String scope, String key) {
		StringRedisTemplate redisTemplate = context.getBean(StringRedisTemplate.class);
		return !redisTemplate.keys("*" + scope + "*" + key + "*").isEmpty();
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Probe probe() {
			return new Probe();
		}

		@Bean
		Listeners listeners(Probe probe) {
			return new Listeners(probe);
		}

		@Bean
		DefaultErrorHandler errorHandler(Probe probe) {
			return new DefaultErrorHandler((record, ex) -> probe.recovered.add(ex), new FixedBackOff(0, 0));
		}

	}

	// what the listeners saw; apart from them, since they are proxied
	static class Probe {

		final List<String> values = new CopyOnWriteArrayList<>();

		final List<Throwable> recovered = new CopyOnWriteArrayList<>();

		final List<String> receipts = new CopyOnWriteArrayList<>();

		final List<String> replies = new CopyOnWriteArrayList<>();

	}

	static class Listeners {

		private final Probe probe;

		Listeners(Probe probe) {
			this.probe = probe;
		}

		@KafkaListener(id = "txc-fingerprint", topics = "it-txc-fingerprint", groupId = "txc-fingerprint")
		@Idempotent(fingerprintExpression = "payload.substring(0, payload.indexOf(' note'))")
		public void fingerprinted(String payment) {
			this.probe.values.add(payment);
		}

		@KafkaListener(id = "txc-result", topics = "it-txc-result", groupId = "txc-result")
		@Idempotent(storeResult = true)
		@SendTo("it-txc-replies")
		public String result(String value) {
			String receipt = "receipt " + value + " #" + UUID.randomUUID();
			this.probe.receipts.add(receipt);
			return receipt;
		}

		@KafkaListener(id = "txc-replies", topics = "it-txc-replies", groupId = "txc-replies")
		public void reply(ConsumerRecord<String, String> reply) {
			this.probe.replies.add(reply.value());
		}

	}

}
