package dev.idempotency.internal.consumer;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.consumer.ListenerFixtures.FailFirst;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;

/**
 * Non-blocking retries: a record retried from a retry topic is the same message as the
 * original, with the original's key and scope, so that a replay of the main topic (or of
 * the retry topic) applies nothing again.
 */
class RetryTopicIntegrationTests {

	private static final String TOPIC = "it-retried";

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Listener.class, FailFirst.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=retried_effects");

	@Test
	void recordAppliedFromTheRetryTopicIsNotAppliedAgainByAReplay() {
		ListenerFixtures.applyFromRetryTopicAndReplay(app, TOPIC, "retried");
	}

	static class Listener extends RecordingListener {

		private final FailFirst failFirst;

		Listener(FailFirst failFirst) {
			this.failFirst = failFirst;
		}

		@RetryableTopic(attempts = "2", backOff = @BackOff(delay = 100), numPartitions = "1",
				replicationFactor = "1")
		@KafkaListener(id = "retried", topics = TOPIC, groupId = "retried")
		@Idempotent
		public void on(ConsumerRecord<String, String> record) {
			effects().add("retried", record.value());
			this.failFirst.failIfFirst(record, TOPIC);
		}

	}

}
