package dev.idempotency.internal.consumer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code @Idempotent} batch listeners of each shape against a real broker and database:
 * the listener receives only new records, in order, in the type it declared.
 */
class BatchListenerIntegrationTests {

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Batches.class)
		.topics("it-batch-records", "it-batch-payloads", "it-batch-consumer-records")
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=batch_effects");

	@ParameterizedTest
	@ValueSource(strings = { "records", "payloads", "consumer-records" })
	void invokesTheListenerWithOnlyTheNewRecordsInOrder(String listener) {
		String run = UUID.randomUUID().toString().substring(0, 8);
		deliver(listener, run + "-1", run + "-2", run + "-3");
		Batches batches = app.bean(Batches.class);
		int before = batches.received(listener).size();
		// old keys 2 and 3, and key 4 twice in the same batch
		deliver(listener, run + "-2", run + "-4", run + "-4", run + "-3", run + "-5");
		List<List<String>> after = batches.received(listener).subList(before, batches.received(listener).size());
		assertThat(after.stream().flatMap(List::stream).toList()).containsExactly(run + "-4", run + "-5");
		for (int i = 1; i <= 5; i++) {
			assertThat(effects(listener, run + "-" + i)).as("effects of key %d", i).isEqualTo(1);
		}
	}

	@ParameterizedTest
	@ValueSource(strings = { "records", "payloads", "consumer-records" })
	void doesNotInvokeTheListenerForABatchOfDuplicates(String listener) {
		String run = UUID.randomUUID().toString().substring(0, 8);
		deliver(listener, run + "-1", run + "-2");
		Batches batches = app.bean(Batches.class);
		int before = batches.received(listener).size();
		deliver(listener, run + "-2", run + "-1", run + "-2");
		assertThat(batches.received(listener)).hasSize(before);
	}

	@ParameterizedTest
	@ValueSource(strings = { "records", "payloads", "consumer-records" })
	void aBatchThatThrowsCommitsNothingAndIsAppliedOnceWhenRedelivered(String listener) {
		String run = UUID.randomUUID().toString().substring(0, 8);
		Batches batches = app.bean(Batches.class);
		batches.failOnce(run + "-boom");
		int before = batches.received(listener).size();
		deliver(listener, run + "-a", run + "-boom", run + "-b");
		List<List<String>> after = batches.received(listener).subList(before, batches.received(listener).size());
		// the failed attempt and the redelivery both saw the whole batch
		assertThat(after).containsExactly(List.of(run + "-a", run + "-boom", run + "-b"),
				List.of(run + "-a", run + "-boom", run + "-b"));
		for (String key : List.of("a", "boom", "b")) {
			assertThat(effects(listener, run + "-" + key)).as("effects of %s", key).isEqualTo(1);
		}
	}

	/**
	 * Send the keys while the listener's container is stopped, then start it, so that
	 * they arrive in one poll, and wait until they are consumed.
	 */
	private static void deliver(String listener, String... keys) {
		app.deliverInOnePoll(listener, "it-batch-" + listener, keys);
	}

	private static int effects(String listener, String key) {
		return app.bean(TestEffects.class).count(listener, key);
	}

	static class Batches extends RecordingListener {

		private final Map<String, List<List<String>>> received = new ConcurrentHashMap<>();

		private final Set<String> failOnce = ConcurrentHashMap.newKeySet();

		@KafkaListener(id = "records", topics = "it-batch-records", groupId = "records", batch = "true")
		@Idempotent
		public void records(List<ConsumerRecord<String, String>> records) {
			apply("records", records.stream().map(ConsumerRecord::value).toList());
		}

		@KafkaListener(id = "payloads", topics = "it-batch-payloads", groupId = "payloads", batch = "true")
		@Idempotent
		public void payloads(List<String> payloads) {
			apply("payloads", payloads);
		}

		@KafkaListener(id = "consumer-records", topics = "it-batch-consumer-records", groupId = "consumer-records",
				batch = "true")
		@Idempotent
		public void consumerRecords(ConsumerRecords<String, String> records) {
			List<String> values = new ArrayList<>();
			records.forEach((record) -> values.add(record.value()));
			apply("consumer-records", values);
		}

		private void apply(String listener, List<String> keys) {
			this.received.computeIfAbsent(listener, (name) -> new CopyOnWriteArrayList<>()).add(List.copyOf(keys));
			keys.forEach((key) -> effects().add(listener, key));
			if (keys.stream().anyMatch(this.failOnce::remove)) {
				throw new IllegalStateException("Simulated failure after the batch's effects were written");
			}
		}

		public void failOnce(String key) {
			this.failOnce.add(key);
		}

		public List<List<String>> received(String listener) {
			return this.received.computeIfAbsent(listener, (name) -> new CopyOnWriteArrayList<>());
		}

	}

}
