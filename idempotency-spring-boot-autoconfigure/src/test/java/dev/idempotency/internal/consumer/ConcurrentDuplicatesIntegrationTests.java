package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestMeters;
import org.apache.kafka.clients.producer.ProducerRecord;
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

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Copies of each message on different partitions, consumed at the same time by six
 * consumer threads in two application instances of one group: each key is applied once.
 */
class ConcurrentDuplicatesIntegrationTests {

	private static final String TOPIC = "it-concurrent";

	private static final String GROUP = "concurrent";

	private static final int PARTITIONS = 6;

	private static final int KEYS = 2000;

	private static final int COPIES = 3;

	private static ConfigurableApplicationContext first;

	private static ConfigurableApplicationContext second;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(TOPIC, PARTITIONS);
		first = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"spring.kafka.listener.concurrency=3");
		second = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"spring.kafka.listener.concurrency=3");
		await().atMost(Duration.ofSeconds(60))
			.until(() -> assignedPartitions(first) + assignedPartitions(second) == PARTITIONS
					&& assignedPartitions(first) > 0 && assignedPartitions(second) > 0);
	}

	@AfterAll
	static void stop() {
		if (first != null) {
			first.close();
		}
		if (second != null) {
			second.close();
		}
	}

	@Test
	void appliesEachKeyOnceAcrossConcurrentConsumers() {
		String run = UUID.randomUUID().toString();
		for (int key = 0; key < KEYS; key++) {
			for (int copy = 0; copy < COPIES; copy++) {
				int partition = (key + copy * 2) % PARTITIONS;
				ProducerRecord<String, String> record = new ProducerRecord<>(TOPIC, partition, null, run + key);
				record.headers().add("X-Idempotency-Key", (run + key).getBytes());
				TestKafka.sendAsync(record);
			}
		}
		TestKafka.flush();
		await().atMost(Duration.ofSeconds(120)).until(() -> committed() == (long) KEYS * COPIES);
		JdbcTemplate jdbc = first.getBean(JdbcTemplate.class);
		List<Map<String, Object>> counts = jdbc.queryForList(
				"SELECT count(*) AS effects, count(DISTINCT message_key) AS keys FROM concurrent_effects");
		assertThat(counts.get(0)).containsEntry("effects", (long) KEYS).containsEntry("keys", (long) KEYS);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_messages WHERE consumer_group = ?",
				Long.class, GROUP))
			.isEqualTo(KEYS);
		assertThat(count("processed")).isEqualTo(KEYS);
		assertThat(count("duplicate")).isEqualTo(KEYS * (COPIES - 1));
		// both instances did part of the work
		assertThat(count(first, "processed") + count(first, "duplicate")).isPositive();
		assertThat(count(second, "processed") + count(second, "duplicate")).isPositive();
	}

	private static long committed() {
		return IntStream.range(0, PARTITIONS)
			.mapToLong((partition) -> Math.max(0,
					TestKafka.committedOffset(GROUP, new TopicPartition(TOPIC, partition))))
			.sum();
	}

	private static int assignedPartitions(ConfigurableApplicationContext context) {
		Collection<TopicPartition> assigned = context.getBean(KafkaListenerEndpointRegistry.class)
			.getListenerContainer("concurrent")
			.getAssignedPartitions();
		return (assigned != null) ? assigned.size() : 0;
	}

	private static double count(String outcome) {
		return count(first, outcome) + count(second, outcome);
	}

	private static double count(ConfigurableApplicationContext context, String outcome) {
		return TestMeters.count(context, "idempotency.messages", "outcome", outcome);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Effects effects(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS concurrent_effects (id BIGSERIAL PRIMARY KEY, "
					+ "message_key TEXT NOT NULL)");
			return new Effects(jdbc);
		}

	}

	static class Effects {

		private final JdbcTemplate jdbc;

		Effects(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "concurrent", topics = TOPIC, groupId = GROUP)
		@Idempotent
		public void apply(String key) {
			this.jdbc.update("INSERT INTO concurrent_effects (message_key) VALUES (?)", key);
		}

	}

}
