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

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Non-blocking retries in lease mode: a record retried from a retry topic is the same
 * message as the original, with the original's key and scope (the failed first attempt
 * released its claim), so that a replay of the main topic (or of the retry topic) applies
 * nothing again.
 */
class LeaseRetryTopicIntegrationTests {

	private static final String TOPIC = "it-lease-retried";

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Listener.class, FailFirst.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=lease_retried_effects");

	@Test
	void recordAppliedFromTheRetryTopicIsNotAppliedAgainByAReplay() {
		String keyed = ListenerFixtures.applyFromRetryTopicAndReplay(app, TOPIC, "lease-retried");
		// one completed claim per message, in the original group's scope
		assertThat(app.jdbc().queryForList("SELECT status FROM processed_messages WHERE consumer_group = "
				+ "'lease-retried' AND (idempotency_key = ? OR idempotency_key LIKE ?)", String.class, keyed,
				TOPIC + "-0-%"))
			.containsExactly("COMPLETED", "COMPLETED");
	}

	static class Listener extends RecordingListener {

		private final FailFirst failFirst;

		Listener(FailFirst failFirst) {
			this.failFirst = failFirst;
		}

		@RetryableTopic(attempts = "2", backOff = @BackOff(delay = 100), numPartitions = "1",
				replicationFactor = "1")
		@KafkaListener(id = "lease-retried", topics = TOPIC, groupId = "lease-retried")
		@Idempotent(mode = Idempotent.Mode.LEASE)
		public void on(ConsumerRecord<String, String> record) {
			// effects outside a transaction: the failing attempt fails before it applies any
			this.failFirst.failIfFirst(record, TOPIC);
			effects().add("lease-retried", record.value());
		}

	}

}
