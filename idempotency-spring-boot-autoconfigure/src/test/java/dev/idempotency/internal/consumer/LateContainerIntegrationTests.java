package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.HeldKey;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Lazy;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A listener container created after the application started (here for a {@code @Lazy}
 * listener bean, created on first use; the registry starts its container at once) gets
 * the infrastructure retries as the others do: a record whose key another consumer holds
 * longer than the application's error handler retries is delayed, not given up. So do the
 * containers of a listener with retry topics, whose factory gives each container an error
 * handler of its own after the application's factory configured it; that handler forwards
 * a failed record to the next retry topic, then to the dead-letter topic.
 */
class LateContainerIntegrationTests {

	private static final String TOPIC = "it-late-container";

	private static final String RETRIED_TOPIC = "it-late-retried";

	// a lazy listener's retry topics are not created for it: the application creates them
	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC, RETRIED_TOPIC, RETRIED_TOPIC + "-retry", RETRIED_TOPIC + "-dlt")
		.properties(TestApplications.WITHOUT_JPA, "idempotency.lock-timeout=100ms",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms");

	@Test
	void aRecordOfALateContainerWhoseKeyIsHeldIsAppliedOnceTheHolderLetsGo() throws Exception {
		String key = UUID.randomUUID().toString();
		// another consumer's claim of the key, in a transaction that stays open
		try (HeldKey held = HeldKey.hold(app.jdbc().getDataSource(), "late-container", key)) {
			app.send(TOPIC, key, key);
			// created now: its container starts after the application did
			app.bean(Listener.class);
			assertThat(app.container("late-container")).isNotNull();
			// far longer than the default handler's ten claims that each give up after 100 ms
			Thread.sleep(6000);
			// then the other consumer fails: its claim rolls back, so this record must be applied
		}
		app.awaitCommitted("late-container", TOPIC, Duration.ofSeconds(60));
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(effects("late-container", key)).isEqualTo(1));
	}

	@Test
	void aRecordOfALateRetryTopicContainerWhoseKeyIsHeldWaitsForTheKeyInsteadOfGoingThroughTheRetryTopics()
			throws Exception {
		String key = UUID.randomUUID().toString();
		try (HeldKey held = HeldKey.hold(app.jdbc().getDataSource(), "late-retried", key)) {
			app.send(RETRIED_TOPIC, key, key);
			// created now: its containers start after the application did
			app.bean(RetriedListener.class);
			assertThat(app.container("late-retried")).isNotNull();
			// far longer than the retry topics' two attempts, 100 ms apart
			Thread.sleep(5000);
			// then the other consumer fails: its claim rolls back, so this record must be applied
		}
		app.awaitCommitted("late-retried", RETRIED_TOPIC, Duration.ofSeconds(60));
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(effects("late-retried", key))
				.as("effects of the record, from any of its topics")
				.isEqualTo(1));
		assertThat(TestKafka.endOffset(new TopicPartition(RETRIED_TOPIC + "-retry", 0)))
			.as("records sent to the retry topic")
			.isZero();
		assertThat(TestKafka.endOffset(new TopicPartition(RETRIED_TOPIC + "-dlt", 0)))
			.as("records sent to the dead-letter topic")
			.isZero();
	}

	private static int effects(String listener, String key) {
		return app.bean(TestEffects.class).count(listener, key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		TestEffects effects(JdbcTemplate jdbc) {
			return new TestEffects(jdbc, "late_container_effects");
		}

		@Bean
		@Lazy
		Listener listener(TestEffects effects) {
			return new Listener(effects);
		}

		@Bean
		@Lazy
		RetriedListener retriedListener(TestEffects effects) {
			return new RetriedListener(effects);
		}

	}

	static class Listener {

		private final TestEffects effects;

		Listener(TestEffects effects) {
			this.effects = effects;
		}

		@KafkaListener(id = "late-container", topics = TOPIC, groupId = "late-container")
		@Idempotent
		public void on(String payload) {
			this.effects.add("late-container", payload);
		}

	}

	static class RetriedListener {

		private final TestEffects effects;

		RetriedListener(TestEffects effects) {
			this.effects = effects;
		}

		@RetryableTopic(attempts = "2", backOff = @BackOff(delay = 100), numPartitions = "1",
				replicationFactor = "1")
		@KafkaListener(id = "late-retried", topics = RETRIED_TOPIC, groupId = "late-retried")
		@Idempotent
		public void on(ConsumerRecord<String, String> record) {
			this.effects.add("late-retried", record.value());
		}

	}

}
