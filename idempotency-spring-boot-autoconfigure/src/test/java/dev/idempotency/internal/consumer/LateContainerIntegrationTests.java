package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.HeldKey;
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
import org.springframework.context.annotation.Lazy;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A listener container created after the application started (here for a {@code @Lazy}
 * listener bean, created on first use; the registry starts its container at once) gets
 * the infrastructure retries as the others do: a record whose key another consumer holds
 * longer than the application's error handler retries is delayed, not given up. So do the
 * containers of a listener with retry topics, whose factory gives each container an error
 * handler of its own after the application's factory configured it; that handler forwards
 * a failed record to the next retry topic, then to the dead-letter topic.
 */
class LateContainerIntegrationTests {

	private static final String TOPIC = "it-late-container";

	private static final String RETRIED_TOPIC = "it-late-retried";

	private static ConfigurableApplicationContext context;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(TOPIC, 1);
		TestInfrastructure.createTopic(RETRIED_TOPIC, 1);
		// a lazy listener's retry topics are not created for it: the application creates them
		TestInfrastructure.createTopic(RETRIED_TOPIC + "-retry", 1);
		TestInfrastructure.createTopic(RETRIED_TOPIC + "-dlt", 1);
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA, "idempotency.lock-timeout=100ms",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms");
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void aRecordOfALateContainerWhoseKeyIsHeldIsAppliedOnceTheHolderLetsGo() throws Exception {
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		// another consumer's claim of the key, in a transaction that stays open
		try (HeldKey held = HeldKey.hold(jdbc.getDataSource(), "late-container", key)) {
			TestKafka.send(TOPIC, 0, key, Map.of("X-Idempotency-Key", key));
			// created now: its container starts after the application did
			context.getBean(Listener.class);
			assertThat(context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("late-container"))
				.isNotNull();
			// far longer than the default handler's ten claims that each give up after 100 ms
			Thread.sleep(6000);
			// then the other consumer fails: its claim rolls back, so this record must be applied
		}
		TestKafka.awaitCommitted("late-container", new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
		await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(jdbc.queryForObject(
				"SELECT count(*) FROM late_container_effects WHERE message_key = ?", Integer.class, key))
			.isEqualTo(1));
	}

	@Test
	void aRecordOfALateRetryTopicContainerWhoseKeyIsHeldWaitsForTheKeyInsteadOfGoingThroughTheRetryTopics()
			throws Exception {
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		try (HeldKey held = HeldKey.hold(jdbc.getDataSource(), "late-retried", key)) {
			TestKafka.send(RETRIED_TOPIC, 0, key, Map.of("X-Idempotency-Key", key));
			// created now: its containers start after the application did
			context.getBean(RetriedListener.class);
			assertThat(context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("late-retried"))
				.isNotNull();
			// far longer than the retry topics' two attempts, 100 ms apart
			Thread.sleep(5000);
			// then the other consumer fails: its claim rolls back, so this record must be applied
		}
		TestKafka.awaitCommitted("late-retried", new TopicPartition(RETRIED_TOPIC, 0), Duration.ofSeconds(60));
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(jdbc.queryForObject(
					"SELECT count(*) FROM late_container_effects WHERE message_key = ?", Integer.class, key))
				.as("effects of the record, from any of its topics")
				.isEqualTo(1));
		assertThat(TestKafka.endOffset(new TopicPartition(RETRIED_TOPIC + "-retry", 0)))
			.as("records sent to the retry topic")
			.isZero();
		assertThat(TestKafka.endOffset(new TopicPartition(RETRIED_TOPIC + "-dlt", 0)))
			.as("records sent to the dead-letter topic")
			.isZero();
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		@Lazy
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS late_container_effects (message_key TEXT NOT NULL)");
			return new Listener(jdbc);
		}

		@Bean
		@Lazy
		RetriedListener retriedListener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS late_container_effects (message_key TEXT NOT NULL)");
			return new RetriedListener(jdbc);
		}

	}

	static class Listener {

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "late-container", topics = TOPIC, groupId = "late-container")
		@Idempotent
		public void on(String payload) {
			this.jdbc.update("INSERT INTO late_container_effects (message_key) VALUES (?)", payload);
		}

	}

	static class RetriedListener {

		private final JdbcTemplate jdbc;

		RetriedListener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@RetryableTopic(attempts = "2", backOff = @BackOff(delay = 100), numPartitions = "1",
				replicationFactor = "1")
		@KafkaListener(id = "late-retried", topics = RETRIED_TOPIC, groupId = "late-retried")
		@Idempotent
		public void on(ConsumerRecord<String, String> record) {
			this.jdbc.update("INSERT INTO late_container_effects (message_key) VALUES (?)", record.value());
		}

	}

}
