package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch with a record that has no key, under {@code idempotency.missing-key=reject}: the
 * other records are applied once, and only the keyless one reaches the error handler's
 * recoverer; nothing before it is lost.
 */
class BatchMissingKeyIntegrationTests {

	private static final String TOPIC = "it-reject-batch";

	@Test
	void appliesTheKeyedRecordsAndHandsOnlyTheKeylessOneToTheErrorHandler() {
		TestInfrastructure.createTopic(TOPIC, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.missing-key=reject")) {
			String run = UUID.randomUUID().toString();
			TestKafka.send(TOPIC, 0, run + "-a", Map.of("X-Idempotency-Key", run + "-a"));
			TestKafka.send(TOPIC, 0, run + "-no-key", Map.of());
			TestKafka.send(TOPIC, 0, run + "-b", Map.of("X-Idempotency-Key", run + "-b"));
			context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("reject-batch").start();
			TestKafka.awaitCommitted("reject-batch", new TopicPartition(TOPIC, 0), Duration.ofSeconds(30));
			Batches batches = context.getBean(Batches.class);
			assertThat(batches.received()).containsExactly(run + "-a", run + "-b");
			assertThat(batches.recovered()).singleElement()
				.satisfies((record) -> assertThat(record.value()).isEqualTo(run + "-no-key"));
			assertThat(batches.exceptions()).singleElement().isInstanceOf(IdempotencyKeyMissingException.class);
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Batches batches() {
			return new Batches();
		}

		@Bean
		DefaultErrorHandler errorHandler(Batches batches) {
			return new DefaultErrorHandler(batches::recover, new FixedBackOff(0, 1));
		}

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
