package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch with a record that has no key, under {@code idempotency.missing-key=reject}: the
 * other records are applied once, and only the keyless one reaches the error handler's
 * recoverer; nothing before it is lost.
 */
class BatchMissingKeyIntegrationTests {

	private static final String TOPIC = "it-reject-batch";

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Batches.class, RecordingBatches.RecoveringErrorHandler.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "idempotency.missing-key=reject");

	@Test
	void appliesTheKeyedRecordsAndHandsOnlyTheKeylessOneToTheErrorHandler() {
		String run = UUID.randomUUID().toString();
		app.send(TOPIC, run + "-a", run + "-a");
		app.send(TOPIC, run + "-no-key", null);
		app.send(TOPIC, run + "-b", run + "-b");
		app.container("reject-batch").start();
		app.awaitCommitted("reject-batch", TOPIC);
		Batches batches = app.bean(Batches.class);
		assertThat(batches.received()).containsExactly(run + "-a", run + "-b");
		assertThat(batches.recovered()).singleElement()
			.satisfies((record) -> assertThat(record.value()).isEqualTo(run + "-no-key"));
		assertThat(batches.exceptions()).singleElement().isInstanceOf(IdempotencyKeyMissingException.class);
	}

	static class Batches extends RecordingBatches {

		@KafkaListener(id = "reject-batch", topics = TOPIC, groupId = "reject-batch", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void on(List<ConsumerRecord<String, String>> records) {
			receive(records);
		}

	}

}
