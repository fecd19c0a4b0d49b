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
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
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

	@Test
	void recordsBeforeTheFailedOneAreAppliedAndItReachesTheRecoverer() {
		TestInfrastructure.createTopic(TOPIC, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class,
				TestApplications.WITHOUT_JPA)) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String run = UUID.randomUUID().toString().substring(0, 8);
			TopicPartition partition = new TopicPartition(TOPIC, 0);
			send(run, "old-1", "old-2");
			KafkaListenerEndpointRegistry registry = context.getBean(KafkaListenerEndpointRegistry.class);
			registry.getListenerContainer("failing-batch").start();
			TestKafka.awaitCommitted("failing-batch", partition, Duration.ofSeconds(30));
			registry.getListenerContainer("failing-batch").stop();
			// one poll: two duplicates, ten good records and a poison in the 6th place of
			// the batch the listener sees (8th of the delivered batch)
			send(run, "old-1", "g1", "old-2", "g2", "g3", "g4", "g5", "poison", "g6", "g7", "g8", "g9", "g10");
			registry.getListenerContainer("failing-batch").start();
			TestKafka.awaitCommitted("failing-batch", partition, Duration.ofSeconds(30));
			for (String key : List.of("old-1", "old-2", "g1", "g2", "g3", "g4", "g5", "g6", "g7", "g8", "g9", "g10")) {
				assertThat(jdbc.queryForObject("SELECT count(*) FROM failed_batch_effects WHERE message_key = ?",
						Integer.class, run + "-" + key))
					.as("effects of %s", key)
					.isEqualTo(1);
			}
			assertThat(context.getBean(Listener.class).recovered()).containsExactly(run + "-poison");
		}
	}

	private static void send(String run, String... keys) {
		for (String key : keys) {
			TestKafka.send(TOPIC, 0, run + "-" + key, Map.of("X-Idempotency-Key", run + "-" + key));
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS failed_batch_effects (id BIGSERIAL PRIMARY KEY, "
					+ "message_key TEXT NOT NULL)");
			return new Listener(jdbc);
		}

		@Bean
		DefaultErrorHandler errorHandler(Listener listener) {
			return new DefaultErrorHandler((record, ex) -> listener.recover((String) record.value()),
					new FixedBackOff(0, 1));
		}

	}

	static class Listener {

		private final List<String> recovered = new CopyOnWriteArrayList<>();

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "failing-batch", topics = TOPIC, groupId = "failing-batch", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void on(List<ConsumerRecord<String, String>> records) {
			for (int i = 0; i < records.size(); i++) {
				String key = records.get(i).value();
				if (key.endsWith("-poison")) {
					throw new BatchListenerFailedException("Poison record", i);
				}
				this.jdbc.update("INSERT INTO failed_batch_effects (message_key) VALUES (?)", key);
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
