package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.consumer.ListenerFixtures.Recovered;
import dev.idempotency.internal.consumer.ListenerFixtures.RecoveringErrorHandler;
import dev.idempotency.internal.consumer.ListenerFixtures.Replies;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestRedis;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.messaging.handler.annotation.SendTo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Payload fingerprints under {@code idempotency.lease.fingerprint-mismatch=warn} and stored
 * results in the transactional mode, with the Redis cache on: the cache knows the keys
 * once they are processed, and must not skip the duplicates of these listeners, whose
 * rows the claim reads.
 */
class TransactionalFingerprintCacheIntegrationTests {

	private static final TestRedis redis = TestRedis.start();

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics("it-txc-fingerprint", "it-txc-result", "it-txc-replies")
		.properties(TestApplications.WITHOUT_JPA, "test.error-handler.retries=0", redis.springProperty(),
				"idempotency.cache.enabled=true", "idempotency.lease.fingerprint-mismatch=warn");

	@AfterAll
	static void stop() {
		app.close();
		redis.close();
	}

	@Test
	void recordWithAKnownKeyAndAnotherPayloadIsCountedAndSkipped() {
		String key = UUID.randomUUID().toString();
		app.send("it-txc-fingerprint", "10 EUR note=first", key);
		app.awaitCommitted("txc-fingerprint", "it-txc-fingerprint");
		cache("txc-fingerprint", key);
		// same amount, another note: the expression fingerprints the amount only
		app.send("it-txc-fingerprint", "10 EUR note=again", key);
		app.send("it-txc-fingerprint", "99 EUR note=first", key);
		app.awaitCommitted("txc-fingerprint", "it-txc-fingerprint");
		assertThat(app.bean(Listeners.class).values()).containsExactly("10 EUR note=first");
		assertThat(app.bean(Recovered.class).failures).isEmpty();
		assertThat(app.count("idempotency.fingerprint.mismatches", "listener", "Listeners.fingerprinted", "policy",
				"warn"))
			.isEqualTo(1);
		assertThat(app.count("idempotency.messages", "listener", "Listeners.fingerprinted", "outcome", "duplicate",
				"source", "store"))
			.isEqualTo(1);
		assertThat(app.count("idempotency.messages", "listener", "Listeners.fingerprinted", "outcome", "rejected"))
			.isEqualTo(1);
	}

	@Test
	void duplicateRepliesTheStoredResult() {
		Replies replies = app.bean(Replies.class);
		String key = UUID.randomUUID().toString();
		app.send("it-txc-result", "order-1", key);
		app.awaitCommitted("txc-result", "it-txc-result");
		cache("txc-result", key);
		app.send("it-txc-result", "order-1", key);
		await().atMost(TestApplication.TIMEOUT).until(() -> replies.replies.size() >= 2);
		assertThat(replies.receipts).hasSize(1);
		assertThat(replies.replies).hasSize(2).containsOnly(replies.receipts.get(0));
		assertThat(app.count("idempotency.messages", "listener", "Listeners.result", "outcome", "duplicate", "source",
				"cache"))
			.isZero();
	}

	// the cache knows the key before its duplicate arrives (a write right after the
	// connection opened may have been dropped, as the cache allows)
	private static void cache(String scope, String key) {
		ProcessedKeyCache cache = app.bean(ProcessedKeyCache.class);
		await().atMost(TestApplication.TIMEOUT).until(() -> {
			if (!cached(scope, key)) {
				cache.markProcessed(scope, key);
			}
			return cached(scope, key);
		});
	}

	private static boolean cached(String scope, String key) {
		return !app.bean(StringRedisTemplate.class).keys("*" + scope + "*" + key + "*").isEmpty();
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ Replies.class, RecoveringErrorHandler.class })
	static class App {

		@Bean
		Listeners listeners(Replies replies) {
			return new Listeners(replies);
		}

	}

	static class Listeners {

		private final List<String> values = new CopyOnWriteArrayList<>();

		private final Replies replies;

		Listeners(Replies replies) {
			this.replies = replies;
		}

		@KafkaListener(id = "txc-fingerprint", topics = "it-txc-fingerprint", groupId = "txc-fingerprint")
		@Idempotent(fingerprintExpression = "payload.substring(0, payload.indexOf(' note'))")
		public void fingerprinted(String payment) {
			this.values.add(payment);
		}

		@KafkaListener(id = "txc-result", topics = "it-txc-result", groupId = "txc-result")
		@Idempotent(storeResult = true)
		@SendTo("it-txc-replies")
		public String result(String value) {
			return this.replies.receipt("receipt " + value + " #" + UUID.randomUUID());
		}

		@KafkaListener(id = "txc-replies", topics = "it-txc-replies", groupId = "txc-replies")
		public void reply(ConsumerRecord<String, String> reply) {
			this.replies.reply(reply);
		}

		// the bean is a proxy: the test reaches its state through methods, not fields
		public List<String> values() {
			return this.values;
		}

	}

}
