package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.HeldKey;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.context.annotation.Lazy;
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
	static final TestApplication app = TestApplication.with(Listener.class, RetriedListener.class)
		.topics(TOPIC, RETRIED_TOPIC, RETRIED_TOPIC + "-retry", RETRIED_TOPIC + "-dlt")
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=late_container_effects",
				"idempotency.lock-timeout=100ms",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms");

	@Test
	void aRecordOfALateContainerWhoseKeyIsHeldIsAppliedOnceTheHolderLetsGo() throws Exception {
		// far longer than the default handler's ten claims that each give up after 100 ms
		awaitAppliedOnceTheHolderLetsGo(Listener.class, "late-container", TOPIC, 6000);
	}

	@Test
	void aRecordOfALateRetryTopicContainerWhoseKeyIsHeldWaitsForTheKeyInsteadOfGoingThroughTheRetryTopics()
			throws Exception {
		// far longer than the retry topics' two attempts, 100 ms apart
		awaitAppliedOnceTheHolderLetsGo(RetriedListener.class, "late-retried", RETRIED_TOPIC, 5000);
		assertThat(TestKafka.endOffset(new TopicPartition(RETRIED_TOPIC + "-retry", 0)))
			.as("records sent to the retry topic")
			.isZero();
		assertThat(TestKafka.endOffset(new TopicPartition(RETRIED_TOPIC + "-dlt", 0)))
			.as("records sent to the dead-letter topic")
			.isZero();
	}

	/**
	 * Send a record whose key another consumer holds, create the lazy listener that reads it
	 * (so that its containers start after the application did), hold the key for a while,
	 * then let go: the record must be applied once.
	 */
	private static void awaitAppliedOnceTheHolderLetsGo(Class<?> listener, String id, String topic, long holdMillis)
			throws Exception {
		String key = UUID.randomUUID().toString();
		// another consumer's claim of the key, in a transaction that stays open
		try (HeldKey held = HeldKey.hold(app.jdbc().getDataSource(), id, key)) {
			app.send(topic, key, key);
			// created now: its containers start after the application did
			app.bean(listener);
			assertThat(app.container(id)).isNotNull();
			Thread.sleep(holdMillis);
			// then the other consumer fails: its claim rolls back, so this record must be applied
		}
		app.awaitCommitted(id, topic, Duration.ofSeconds(60));
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(effects(id, key)).as("effects of the record, from any of its topics")
				.isEqualTo(1));
	}

	private static int effects(String listener, String key) {
		return app.bean(TestEffects.class).count(listener, key);
	}

	@Lazy
	static class Listener extends RecordingListener {

		@KafkaListener(id = "late-container", topics = TOPIC, groupId = "late-container")
		@Idempotent
		public void on(String payload) {
			effects().add("late-container", payload);
		}

	}

	@Lazy
	static class RetriedListener extends RecordingListener {

		@RetryableTopic(attempts = "2", backOff = @BackOff(delay = 100), numPartitions = "1",
				replicationFactor = "1")
		@KafkaListener(id = "late-retried", topics = RETRIED_TOPIC, groupId = "late-retried")
		@Idempotent
		public void on(ConsumerRecord<String, String> record) {
			effects().add("late-retried", record.value());
		}

	}

}
