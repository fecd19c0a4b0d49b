package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.adapter.RecordFilterStrategy;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch listener that takes a List of payloads behind the container factory's
 * {@link RecordFilterStrategy}: the payloads it receives are matched to the records that
 * passed the filter, not to the whole poll.
 */
class FilteredBatchIntegrationTests {

	private static final String TOPIC = "it-filtered-batch";

	@Test
	void payloadBatchBehindAFilterGetsTheNewRecordsThatPassed() {
		TestInfrastructure.createTopic(TOPIC, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"spring.kafka.listener.type=batch")) {
			String run = UUID.randomUUID().toString().substring(0, 8);
			send(run + "-a", run + "-ignored-1", run + "-b");
			KafkaListenerEndpointRegistry registry = context.getBean(KafkaListenerEndpointRegistry.class);
			registry.getListenerContainer("filtered").start();
			TestKafka.awaitCommitted("filtered", new TopicPartition(TOPIC, 0), Duration.ofSeconds(30));
			registry.getListenerContainer("filtered").stop();
			send(run + "-ignored-2", run + "-a", run + "-c", run + "-ignored-3", run + "-b", run + "-d");
			registry.getListenerContainer("filtered").start();
			TestKafka.awaitCommitted("filtered", new TopicPartition(TOPIC, 0), Duration.ofSeconds(30));
			assertThat(context.getBean(Listener.class).received()).containsExactly(run + "-a", run + "-b",
					run + "-c", run + "-d");
		}
	}

	private static void send(String... values) {
		for (String value : values) {
			TestKafka.send(TOPIC, 0, value, Map.of("X-Idempotency-Key", value));
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener() {
			return new Listener();
		}

		@Bean
		RecordFilterStrategy<Object, Object> ignoreFilter() {
			return (record) -> String.valueOf(record.value()).contains("-ignored-");
		}

	}

	static class Listener {

		private final List<String> received = new CopyOnWriteArrayList<>();

		@KafkaListener(id = "filtered", topics = TOPIC, groupId = "filtered", autoStartup = "false")
		@Idempotent
		public void on(List<String> payloads) {
			this.received.addAll(payloads);
		}

		public List<String> received() {
			return this.received;
		}

	}

}
