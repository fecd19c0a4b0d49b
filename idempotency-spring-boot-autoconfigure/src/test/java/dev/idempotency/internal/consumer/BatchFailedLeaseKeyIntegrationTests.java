package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyClaimFailedException;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch with a record whose key a lease-mode listener of the same scope marked
 * {@code FAILED}: as for a record listener, that record goes to the recoverer; the other
 * records of the batch are applied once, and none of them goes with it.
 */
class BatchFailedLeaseKeyIntegrationTests {

	private static final String TOPIC = "it-failed-lease-batch";

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Batches.class, RecordingBatches.RecoveringErrorHandler.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA);

	@Test
	void appliesTheOtherRecordsAndHandsOnlyTheFailedKeysRecordToTheRecoverer() {
		String run = UUID.randomUUID().toString();
		app.jdbc()
			.update("INSERT INTO processed_messages (consumer_group, idempotency_key, processed_at, status, "
					+ "fencing_token, failure) VALUES (?, ?, now(), 'FAILED', "
					+ "nextval('processed_messages_fencing_seq'), 'declined')", "failed-lease-batch", run + "-k");
		app.deliverInOnePoll("failed-lease-batch", TOPIC, run + "-a", run + "-b", run + "-k", run + "-c");
		Batches batches = app.bean(Batches.class);
		assertThat(batches.received()).containsExactly(run + "-a", run + "-b", run + "-c");
		assertThat(batches.recovered()).singleElement()
			.satisfies((record) -> assertThat(record.value()).isEqualTo(run + "-k"));
		assertThat(batches.exceptions()).singleElement().isInstanceOf(IdempotencyClaimFailedException.class);
	}

	static class Batches extends RecordingBatches {

		@KafkaListener(id = "failed-lease-batch", topics = TOPIC, groupId = "failed-lease-batch", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void on(List<ConsumerRecord<String, String>> records) {
			receive(records);
		}

	}

}
