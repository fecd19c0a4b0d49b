package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.adapter.RecordFilterStrategy;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch listener that takes a List of payloads behind the container factory's
 * {@link RecordFilterStrategy}: the payloads it receives are matched to the records that
 * passed the filter, not to the whole poll.
 */
class FilteredBatchIntegrationTests {

	private static final String TOPIC = "it-filtered-batch";

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "spring.kafka.listener.type=batch");

	@Test
	void payloadBatchBehindAFilterGetsTheNewRecordsThatPassed() {
		String run = UUID.randomUUID().toString().substring(0, 8);
		app.deliverInOnePoll("filtered", TOPIC, run + "-a", run + "-ignored-1", run + "-b");
		app.deliverInOnePoll("filtered", TOPIC, run + "-ignored-2", run + "-a", run + "-c", run + "-ignored-3",
				run + "-b", run + "-d");
		assertThat(app.bean(Listener.class).received()).containsExactly(run + "-a", run + "-b", run + "-c",
				run + "-d");
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Listener.class)
	static class App {

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
