package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code @Idempotent} batch listeners of each shape against a real broker and database:
 * the listener receives only new records, in order, in the type it declared.
 */
class BatchListenerIntegrationTests {

	private static final String KEY = "X-Idempotency-Key";

	private static ConfigurableApplicationContext context;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void start() {
		for (String listener : List.of("records", "payloads", "consumer-records")) {
			TestInfrastructure.createTopic("it-batch-" + listener, 1);
		}
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA);
		jdbc = context.getBean(JdbcTemplate.class);
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@ParameterizedTest
	@ValueSource(strings = { "records", "payloads", "consumer-records" })
	void invokesTheListenerWithOnlyTheNewRecordsInOrder(String listener) {
		String run = UUID.randomUUID().toString().substring(0, 8);
		deliver(listener, run + "-1", run + "-2", run + "-3");
		Batches batches = context.getBean(Batches.class);
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
		Batches batches = context.getBean(Batches.class);
		int before = batches.received(listener).size();
		deliver(listener, run + "-2", run + "-1", run + "-2");
		assertThat(batches.received(listener)).hasSize(before);
	}

	@ParameterizedTest
	@ValueSource(strings = { "records", "payloads", "consumer-records" })
	void aBatchThatThrowsCommitsNothingAndIsAppliedOnceWhenRedelivered(String listener) {
		String run = UUID.randomUUID().toString().substring(0, 8);
		Batches batches = context.getBean(Batches.class);
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
		MessageListenerContainer container = context.getBean(KafkaListenerEndpointRegistry.class)
			.getListenerContainer(listener);
		container.stop();
		String topic = "it-batch-" + listener;
		for (String key : keys) {
			TestKafka.send(topic, 0, key, Map.of(KEY, key));
		}
		container.start();
		TestKafka.awaitCommitted(listener, new TopicPartition(topic, 0), Duration.ofSeconds(30));
	}

	private static int effects(String listener, String key) {
		return jdbc.queryForObject("SELECT count(*) FROM batch_effects WHERE listener = ? AND message_key = ?",
				Integer.class, listener, key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Batches batches(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS batch_effects (id BIGSERIAL PRIMARY KEY, listener TEXT NOT NULL, "
					+ "message_key TEXT NOT NULL)");
			return new Batches(jdbc);
		}

	}

	static class Batches {

		private final Map<String, List<List<String>>> received = new ConcurrentHashMap<>();

		private final Set<String> failOnce = ConcurrentHashMap.newKeySet();

		private final JdbcTemplate jdbc;

		Batches(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

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
			this.jdbc.batchUpdate("INSERT INTO batch_effects (listener, message_key) VALUES (?, ?)",
					keys.stream().map((key) -> new Object[] { listener, key }).collect(Collectors.toList()));
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
