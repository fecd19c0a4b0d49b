package dev.idempotency.internal.consumer;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.metrics.IdempotencyObservationContext;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import io.micrometer.observation.Observation;
import io.micrometer.observation.tck.TestObservationRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The observation of each {@code @Idempotent} invocation, with Micrometer's
 * {@link TestObservationRegistry}, a real broker and a real PostgreSQL.
 */
class ListenerObservationIntegrationTests {

	private static final String RECORDS = "it-observed-records";

	private static final String BATCHES = "it-observed-batches";

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(RECORDS, BATCHES)
		.properties(TestApplications.WITHOUT_JPA, "spring.kafka.listener.observation-enabled=true");

	@Test
	void observesAProcessedRecordAndItsDuplicateUnderTheContainersObservation() {
		String key = UUID.randomUUID().toString();
		int before = observations("Observed.record").size();
		deliver(RECORDS, key, "first");
		deliver(RECORDS, key, "again");
		List<Observation.Context> observations = observations("Observed.record");
		assertThat(observations.subList(before, observations.size())).satisfiesExactly((processed) -> {
			assertKeyValues(processed, "Observed.record", "processed", "store", "false");
			assertThat(processed.getError()).isNull();
			// the decision is a child of spring-kafka's span of the record
			assertThat(processed.getParentObservation()).isNotNull();
			assertThat(processed.getParentObservation().getContextView().getName()).isEqualTo("spring.kafka.listener");
		}, (duplicate) -> assertKeyValues(duplicate, "Observed.record", "duplicate", "store", "false"));
	}

	@Test
	void observesAFailedRecordWithItsError() {
		String key = UUID.randomUUID().toString();
		int before = observations("Observed.record").size();
		deliver(RECORDS, key, "boom");
		List<Observation.Context> observations = observations("Observed.record");
		// one attempt, then the error handler gives up and commits the offset
		assertThat(observations.subList(before, observations.size())).singleElement().satisfies((failed) -> {
			assertKeyValues(failed, "Observed.record", "failed", "store", "false");
			assertThat(failed.getError()).hasMessageContaining("boom");
		});
	}

	@Test
	void observesEachBatchOnce() {
		String key = UUID.randomUUID().toString();
		int before = observations("Observed.batch").size();
		deliver(BATCHES, key, "first");
		deliver(BATCHES, key, "again");
		List<Observation.Context> observations = observations("Observed.batch");
		assertThat(observations.subList(before, observations.size())).satisfiesExactly(
				(processed) -> assertKeyValues(processed, "Observed.batch", "processed", "store", "true"),
				(duplicate) -> assertKeyValues(duplicate, "Observed.batch", "duplicate", "store", "true"));
	}

	// each listener's group is named after its topic
	private static void deliver(String topic, String key, String value) {
		app.send(topic, value, key);
		app.awaitCommitted(topic, topic);
	}

	private static List<Observation.Context> observations(String listener) {
		List<Observation.Context> found = new ArrayList<>();
		app.bean(TestObservationRegistry.class).assertThat().hasHandledContextsThatSatisfy((contexts) -> {
			for (Observation.Context handled : contexts) {
				if (handled instanceof IdempotencyObservationContext observed
						&& observed.getListener().equals(listener)) {
					found.add(handled);
				}
			}
		});
		return found;
	}

	private static void assertKeyValues(Observation.Context observation, String listener, String outcome,
			String source, String batch) {
		assertThat(observation.getName()).isEqualTo("idempotency.listener");
		assertThat(observation.getLowCardinalityKeyValue("listener").getValue()).isEqualTo(listener);
		assertThat(observation.getLowCardinalityKeyValue("outcome").getValue()).isEqualTo(outcome);
		assertThat(observation.getLowCardinalityKeyValue("source").getValue()).isEqualTo(source);
		assertThat(observation.getLowCardinalityKeyValue("batch").getValue()).isEqualTo(batch);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Observed.class)
	static class App {

		@Bean
		TestObservationRegistry observationRegistry() {
			return TestObservationRegistry.create();
		}

		@Bean
		DefaultErrorHandler errorHandler() {
			return new DefaultErrorHandler(new FixedBackOff(0, 0));
		}

	}

	static class Observed {

		@KafkaListener(id = "observed-records", topics = RECORDS, groupId = RECORDS)
		@Idempotent
		public void record(ConsumerRecord<String, String> record) {
			if (record.value().equals("boom")) {
				throw new IllegalStateException("boom");
			}
		}

		@KafkaListener(id = "observed-batches", topics = BATCHES, groupId = BATCHES, batch = "true")
		@Idempotent
		public void batch(List<ConsumerRecord<String, String>> records) {
		}

	}

}
