package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;
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

	private static ConfigurableApplicationContext context;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(RECORDS, 1);
		TestInfrastructure.createTopic(BATCHES, 1);
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA, "spring.kafka.listener.ack-mode=manual",
				// a nack pauses the partition until the next poll returns: keep polls short
				"spring.kafka.listener.poll-timeout=200ms");
		jdbc = context.getBean(JdbcTemplate.class);
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void nackedRecordIsRolledBackAndItsRedeliveryApplied() {
		String run = UUID.randomUUID().toString();
		for (int i = 0; i < 10; i++) {
			TestKafka.send(RECORDS, 0, run + "-" + i, Map.of("X-Idempotency-Key", run + "-" + i));
		}
		TestKafka.awaitCommitted("nack-record", new TopicPartition(RECORDS, 0), Duration.ofSeconds(30));
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
		Listeners listeners = context.getBean(Listeners.class);
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
		Listeners listeners = context.getBean(Listeners.class);
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
		MessageListenerContainer container = context.getBean(KafkaListenerEndpointRegistry.class)
			.getListenerContainer("nack-batch");
		container.stop();
		for (String key : keys) {
			TestKafka.send(BATCHES, 0, key, Map.of("X-Idempotency-Key", key));
		}
		container.start();
		TestKafka.awaitCommitted("nack-batch", new TopicPartition(BATCHES, 0), Duration.ofSeconds(30));
	}

	private static int effects(String kind, String key) {
		return jdbc.queryForObject("SELECT count(*) FROM ack_effects WHERE kind = ? AND message_key = ?",
				Integer.class, kind, key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listeners listeners(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS ack_effects (id BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, "
					+ "message_key TEXT NOT NULL)");
			return new Listeners(jdbc);
		}

	}

	static class Listeners {

		private final Set<String> seen = ConcurrentHashMap.newKeySet();

		private final Set<String> nackOnce = ConcurrentHashMap.newKeySet();

		private final Set<String> nackWholeBatchOnce = ConcurrentHashMap.newKeySet();

		private final Set<String> unsupportedNacks = ConcurrentHashMap.newKeySet();

		private final JdbcTemplate jdbc;

		Listeners(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

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
				insert("nacked", payload);
				acknowledgment.nack(Duration.ofMillis(10));
				return;
			}
			insert("applied", payload);
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
				insert("batch", key);
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

		private void insert(String kind, String key) {
			this.jdbc.update("INSERT INTO ack_effects (kind, message_key) VALUES (?, ?)", kind, key);
		}

	}

}
