package dev.idempotency.internal.consumer;

import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A batch listener that names a failed record with its own
 * {@link BatchListenerFailedException}: the records before it are committed with their
 * claims, the failed one goes to the error handler's recoverer, the rest are applied.
 */
class BatchListenerFailedIntegrationTests {

	private static final String TOPIC = "it-batch-failed";

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=failed_batch_effects");

	@Test
	void recordsBeforeTheFailedOneAreAppliedAndItReachesTheRecoverer() {
		String run = UUID.randomUUID().toString().substring(0, 8);
		deliver(run, "old-1", "old-2");
		// one poll: two duplicates, ten good records and a poison in the 6th place of
		// the batch the listener sees (8th of the delivered batch)
		deliver(run, "old-1", "g1", "old-2", "g2", "g3", "g4", "g5", "poison", "g6", "g7", "g8", "g9", "g10");
		TestEffects effects = app.bean(TestEffects.class);
		for (String key : List.of("old-1", "old-2", "g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8", "g9", "g10")) {
			assertThat(effects.count("failing-batch", run + "-" + key)).as("effects of %s", key).isEqualTo(1);
		}
		assertThat(app.bean(Listener.class).recovered()).containsExactly(run + "-poison");
	}

	private static void deliver(String run, String... keys) {
		app.deliverInOnePoll("failing-batch", TOPIC,
				Arrays.stream(keys).map((key) -> run + "-" + key).toArray(String[]::new));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Listener.class)
	static class App {

		@Bean
		DefaultErrorHandler errorHandler(Listener listener) {
			return new DefaultErrorHandler((record, ex) -> listener.recover((String) record.value()),
					new FixedBackOff(0, 1));
		}

	}

	static class Listener extends RecordingListener {

		private final List<String> recovered = new CopyOnWriteArrayList<>();

		@KafkaListener(id = "failing-batch", topics = TOPIC, groupId = "failing-batch", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void on(List<ConsumerRecord<String, String>> records) {
			for (int i = 0; i < records.size(); i++) {
				String key = records.get(i).value();
				if (key.endsWith("-poison")) {
					throw new BatchListenerFailedException("Poison record", i);
				}
				effects().add("failing-batch", key);
			}
		}

		public void recover(String key) {
			this.recovered.add(key);
		}

		public List<String> recovered() {
			return this.recovered;
		}

	}

}
