package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.IntStream;

import dev.idempotency.Idempotent;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.metrics.IdempotencyObservationContext;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestRedis;
import io.micrometer.observation.Observation;
import io.micrometer.observation.tck.TestObservationRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.ConcurrentKafkaListenerContainerFactoryConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.listener.ContainerProperties.AckMode;
import org.springframework.kafka.support.Acknowledgment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Records whose keys the poll's lookup found processed are skipped before the listener is
 * invoked (no listener observation, counted as duplicates), and their offsets committed;
 * where that skip would not be the interceptor's own decision (a key that reads the
 * converted payload, manual acknowledgment), every record still reaches the listener.
 * With a real broker, PostgreSQL and Redis.
 */
class KnownDuplicatesIntegrationTests {

	private static final String HEADER_KEYS = "it-known-header";

	private static final String PAYLOAD_KEYS = "it-known-payload";

	private static final String MANUAL = "it-known-manual";

	private static final TestRedis redis = TestRedis.start();

	// after-all callbacks run in reverse order: Redis stops after the application closed
	@RegisterExtension
	@Order(1)
	static final AfterAllCallback stopRedis = (extension) -> redis.close();

	@RegisterExtension
	@Order(2)
	static final TestApplication app = TestApplication.of(App.class)
		.topics(HEADER_KEYS, PAYLOAD_KEYS, MANUAL)
		.properties(TestApplications.WITHOUT_JPA, redis.springProperty(), "idempotency.cache.enabled=true",
				// on a loaded machine, a slow answer would open the cache's breaker: every
				// record would then reach the listener
				"idempotency.cache.timeout=10s", "test.effects-table=known_effects");

	@Test
	void knownDuplicatesAreSkippedBeforeTheListenerAndCommitted() {
		List<String> keys = keys(20);
		app.deliverInOnePoll(HEADER_KEYS, HEADER_KEYS, keys.toArray(String[]::new));
		awaitCached(HEADER_KEYS, keys);
		int observed = observations("Listeners.header");
		double duplicates = app.count("idempotency.messages", "listener", "Listeners.header", "outcome", "duplicate",
				"source", "cache");
		String fresh = UUID.randomUUID().toString();
		List<String> again = new ArrayList<>(keys);
		again.add(10, fresh);

		app.deliverInOnePoll(HEADER_KEYS, HEADER_KEYS, again.toArray(String[]::new));

		// only the new record reached the listener method
		assertThat(observations("Listeners.header") - observed).isEqualTo(1);
		assertThat(app.count("idempotency.messages", "listener", "Listeners.header", "outcome", "duplicate", "source",
				"cache") - duplicates).isEqualTo(20);
		for (String key : again) {
			assertThat(app.bean(TestEffects.class).count(HEADER_KEYS, key)).as("effects of %s", key).isEqualTo(1);
		}
	}

	@Test
	void aKeyReadFromTheConvertedPayloadIsDecidedByTheListener() {
		// the record value "007" is the payload 7 once converted: the key is "7", and a
		// processed "007" must not make the container skip it
		String run = String.valueOf(1000 + (System.nanoTime() & 0xffff));
		String raw = "000" + run;
		app.jdbc()
			.update("INSERT INTO processed_messages (consumer_group, idempotency_key) VALUES (?, ?)", PAYLOAD_KEYS,
					raw);
		app.bean(ProcessedKeyCache.class).markProcessed(PAYLOAD_KEYS, raw);
		int observed = observations("Listeners.payload");

		app.deliverInOnePoll(PAYLOAD_KEYS, PAYLOAD_KEYS, raw, "000" + (Long.parseLong(run) + 1));

		assertThat(observations("Listeners.payload") - observed).isEqualTo(2);
		assertThat(app.bean(TestEffects.class).count(PAYLOAD_KEYS, run)).isEqualTo(1);
	}

	@Test
	void withManualAcknowledgmentDuplicatesReachTheListenerWhichAcknowledgesThem() {
		List<String> keys = keys(10);
		app.deliverInOnePoll(MANUAL, MANUAL, keys.toArray(String[]::new));
		awaitCached(MANUAL, keys);
		int observed = observations("Listeners.manual");

		// committed: each duplicate was acknowledged on the listener's behalf
		app.deliverInOnePoll(MANUAL, MANUAL, keys.toArray(String[]::new));

		assertThat(observations("Listeners.manual") - observed).isEqualTo(10);
		for (String key : keys) {
			assertThat(app.bean(TestEffects.class).count(MANUAL, key)).as("effects of %s", key).isEqualTo(1);
		}
	}

	private static List<String> keys(int count) {
		String run = UUID.randomUUID().toString().substring(0, 8);
		return IntStream.range(0, count).mapToObj((i) -> run + "-" + i).toList();
	}

	private static void awaitCached(String group, List<String> keys) {
		ProcessedKeyCache cache = app.bean(ProcessedKeyCache.class);
		await().atMost(Duration.ofSeconds(10)).until(() -> keys.stream().allMatch((key) -> cache.isProcessed(group, key)));
	}

	private static int observations(String listener) {
		int[] found = new int[1];
		app.bean(TestObservationRegistry.class).assertThat().hasHandledContextsThatSatisfy((contexts) -> {
			for (Observation.Context handled : contexts) {
				if (handled instanceof IdempotencyObservationContext observed
						&& observed.getListener().equals(listener)) {
					found[0]++;
				}
			}
		});
		return found[0];
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Listeners.class)
	static class App {

		@Bean
		TestObservationRegistry observationRegistry() {
			return TestObservationRegistry.create();
		}

		@Bean
		ConcurrentKafkaListenerContainerFactory<Object, Object> manualAcknowledgment(
				ConcurrentKafkaListenerContainerFactoryConfigurer configurer, ConsumerFactory<Object, Object> consumers) {
			ConcurrentKafkaListenerContainerFactory<Object, Object> factory = new ConcurrentKafkaListenerContainerFactory<>();
			configurer.configure(factory, consumers);
			factory.getContainerProperties().setAckMode(AckMode.MANUAL);
			return factory;
		}

	}

	static class Listeners extends RecordingListener {

		@KafkaListener(id = HEADER_KEYS, topics = HEADER_KEYS, groupId = HEADER_KEYS, autoStartup = "false")
		@Idempotent
		public void header(ConsumerRecord<String, String> record) {
			effects().add(HEADER_KEYS, record.value());
		}

		@KafkaListener(id = PAYLOAD_KEYS, topics = PAYLOAD_KEYS, groupId = PAYLOAD_KEYS, autoStartup = "false")
		@Idempotent(key = "payload")
		public void payload(Long value) {
			effects().add(PAYLOAD_KEYS, String.valueOf(value));
		}

		@KafkaListener(id = MANUAL, topics = MANUAL, groupId = MANUAL, autoStartup = "false",
				containerFactory = "manualAcknowledgment")
		@Idempotent
		public void manual(String value, Acknowledgment acknowledgment) {
			effects().add(MANUAL, value);
			acknowledgment.acknowledge();
		}

	}

}
