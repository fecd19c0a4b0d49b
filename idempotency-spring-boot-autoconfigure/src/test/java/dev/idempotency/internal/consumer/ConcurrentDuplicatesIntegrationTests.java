package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;

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

	// the first instance creates the topic, so it starts first
	@RegisterExtension
	@Order(1)
	static final TestApplication first = TestApplication.with(Listener.class)
		.topics(TOPIC + ":" + PARTITIONS)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=concurrent_effects",
				"spring.kafka.listener.concurrency=3");

	@RegisterExtension
	@Order(2)
	static final TestApplication second = TestApplication.with(Listener.class)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=concurrent_effects",
				"spring.kafka.listener.concurrency=3");

	@BeforeAll
	static void awaitBothInstancesAssigned() {
		await().atMost(Duration.ofSeconds(60))
			.until(() -> assignedPartitions(first) + assignedPartitions(second) == PARTITIONS
					&& assignedPartitions(first) > 0 && assignedPartitions(second) > 0);
	}

	@Test
	void appliesEachKeyOnceAcrossConcurrentConsumers() {
		String run = UUID.randomUUID().toString();
		for (int key = 0; key < KEYS; key++) {
			for (int copy = 0; copy < COPIES; copy++) {
				int partition = (key + copy * 2) % PARTITIONS;
				ProducerRecord<String, String> record = new ProducerRecord<>(TOPIC, partition, null, run + key);
				record.headers().add(TestApplication.KEY_HEADER, (run + key).getBytes());
				TestKafka.sendAsync(record);
			}
		}
		TestKafka.flush();
		await().atMost(Duration.ofSeconds(120)).until(() -> committed() == (long) KEYS * COPIES);
		JdbcTemplate jdbc = first.jdbc();
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

	private static int assignedPartitions(TestApplication app) {
		Collection<TopicPartition> assigned = app.container("concurrent").getAssignedPartitions();
		return (assigned != null) ? assigned.size() : 0;
	}

	private static double count(String outcome) {
		return count(first, outcome) + count(second, outcome);
	}

	private static double count(TestApplication app, String outcome) {
		return app.count("idempotency.messages", "outcome", outcome);
	}

	static class Listener extends RecordingListener {

		@KafkaListener(id = "concurrent", topics = TOPIC, groupId = GROUP)
		@Idempotent
		public void apply(String key) {
			effects().add("concurrent", key);
		}

	}

}
