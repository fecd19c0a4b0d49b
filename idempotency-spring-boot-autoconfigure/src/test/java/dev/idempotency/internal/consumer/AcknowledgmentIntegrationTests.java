package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.Acknowledgment;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Manual acknowledgment in {@code @Idempotent} listeners: a {@code nack} rolls back the
 * claim with the listener's work, so that the redelivery is applied; a batch
 * {@code nack(index)} is translated from the filtered batch the listener saw to the
 * batch the container delivered.
 */
class AcknowledgmentIntegrationTests {

	private static final String RECORDS = "it-nack-record";

	private static final String BATCHES = "it-nack-batch";

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Listeners.class)
		.topics(RECORDS, BATCHES)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=ack_effects",
				"spring.kafka.listener.ack-mode=manual",
				// a nack pauses the partition until the next poll returns: keep polls short
				"spring.kafka.listener.poll-timeout=200ms");

	@Test
	void nackedRecordIsRolledBackAndItsRedeliveryApplied() {
		String run = UUID.randomUUID().toString();
		for (int i = 0; i < 10; i++) {
			app.send(RECORDS, run + "-" + i, run + "-" + i);
		}
		app.awaitCommitted("nack-record", RECORDS);
		for (int i = 0; i < 10; i++) {
			assertThat(effects("applied", run + "-" + i)).as("applied %d", i).isEqualTo(1);
			// written before the nack: it must have rolled back with the claim
			assertThat(effects("nacked", run + "-" + i)).as("nacked attempt %d", i).isZero();
		}
	}

	@Test
	void batchNackIndexIsTranslatedToTheDeliveredBatch() {
		String run = UUID.randomUUID().toString().substring(0, 8);
		deliverBatch(run + "-a", run + "-b");
		Listeners listeners = app.bean(Listeners.class);
		listeners.nackOnce(run + "-d");
		// a and b are duplicates: the listener sees [c, d, e] and nacks d, its index 1,
		// which is index 3 of the delivered batch
		deliverBatch(run + "-a", run + "-c", run + "-b", run + "-d", run + "-e");
		for (String key : List.of("a", "b", "c", "d", "e")) {
			assertThat(effects("batch", run + "-" + key)).as("effects of %s", key).isEqualTo(1);
		}
	}

	@Test
	void batchNackWithoutAnIndexFailsInTheListenerAsTheContainerWouldAndAppliesNothingTwice() {
		String run = UUID.randomUUID().toString().substring(0, 8);
		Listeners listeners = app.bean(Listeners.class);
		// the listener writes the effects of the whole batch, then calls nack(Duration),
		// which a batch acknowledgment does not support
		listeners.nackWholeBatchOnce(run + "-a");
		deliverBatch(run + "-a", run + "-b", run + "-c");
		for (String key : List.of("a", "b", "c")) {
			assertThat(effects("batch", run + "-" + key)).as("effects of %s", key).isEqualTo(1);
		}
		assertThat(listeners.unsupportedNacks()).contains(run + "-a");
	}

	private static void deliverBatch(String... keys) {
		app.deliverInOnePoll("nack-batch", BATCHES, keys);
	}

	private static int effects(String kind, String key) {
		return app.bean(TestEffects.class).count(kind, key);
	}

	static class Listeners extends RecordingListener {

		private final Set<String> seen = ConcurrentHashMap.newKeySet();

		private final Set<String> nackOnce = ConcurrentHashMap.newKeySet();

		private final Set<String> nackWholeBatchOnce = ConcurrentHashMap.newKeySet();

		private final Set<String> unsupportedNacks = ConcurrentHashMap.newKeySet();

		public void nackOnce(String key) {
			this.nackOnce.add(key);
		}

		public void nackWholeBatchOnce(String key) {
			this.nackWholeBatchOnce.add(key);
		}

		public Set<String> unsupportedNacks() {
			return this.unsupportedNacks;
		}

		@KafkaListener(id = "nack-record", topics = RECORDS, groupId = "nack-record")
		@Idempotent
		public void record(String payload, Acknowledgment acknowledgment) {
			if (this.seen.add(payload)) {
				effects().add("nacked", payload);
				acknowledgment.nack(Duration.ofMillis(10));
				return;
			}
			effects().add("applied", payload);
			acknowledgment.acknowledge();
		}

		@KafkaListener(id = "nack-batch", topics = BATCHES, groupId = "nack-batch", batch = "true")
		@Idempotent
		public void batch(List<ConsumerRecord<String, String>> records, Acknowledgment acknowledgment) {
			for (int i = 0; i < records.size(); i++) {
				String key = records.get(i).value();
				if (this.nackOnce.remove(key)) {
					acknowledgment.nack(i, Duration.ofMillis(10));
					return;
				}
				effects().add("batch", key);
			}
			String first = records.get(0).value();
			if (this.nackWholeBatchOnce.remove(first)) {
				try {
					acknowledgment.nack(Duration.ofMillis(10));
				}
				catch (UnsupportedOperationException ex) {
					this.unsupportedNacks.add(first);
					throw ex;
				}
				return;
			}
			acknowledgment.acknowledge();
		}

	}

}
