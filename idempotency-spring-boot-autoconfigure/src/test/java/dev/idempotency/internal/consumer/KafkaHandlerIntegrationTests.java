package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestMeters;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.aop.support.AopUtils;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An {@code @Idempotent @KafkaHandler} method of a class-level {@code @KafkaListener},
 * against a real Kafka broker and a real PostgreSQL.
 */
class KafkaHandlerIntegrationTests {

	private static final String TOPIC = "it-kafka-handler";

	private static final String GROUP = "kafka-handler";

	private static ConfigurableApplicationContext context;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(TOPIC, 1);
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA);
		jdbc = context.getBean(JdbcTemplate.class);
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void appliesEachKeyOnceSkipsDuplicatesAndCommitsEveryOffset() {
		assertThat(AopUtils.isAopProxy(context.getBean(Handlers.class))).isTrue();
		String run = UUID.randomUUID().toString();
		double duplicatesBefore = duplicates();
		for (int copy = 0; copy < 3; copy++) {
			for (int i = 0; i < 4; i++) {
				TestKafka.send(TOPIC, 0, run + "-" + i, Map.of("X-Idempotency-Key", run + "-" + i));
			}
		}
		TestKafka.awaitCommitted(GROUP, new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
		for (int i = 0; i < 4; i++) {
			assertThat(effects(run + "-" + i)).as("effects of key %d", i).isEqualTo(1);
			assertThat(claims(run + "-" + i)).as("claims of key %d", i).isEqualTo(1);
		}
		assertThat(duplicates() - duplicatesBefore).isEqualTo(8.0);
	}

	private static int effects(String key) {
		return jdbc.queryForObject("SELECT count(*) FROM kafka_handler_effects WHERE message_key = ?", Integer.class,
				key);
	}

	private static int claims(String key) {
		return jdbc.queryForObject(
				"SELECT count(*) FROM processed_messages WHERE consumer_group = ? AND idempotency_key = ?",
				Integer.class, GROUP, key);
	}

	private static double duplicates() {
		return TestMeters.count(context, "idempotency.messages", "listener", "Handlers.on", "outcome", "duplicate");
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Handlers handlers(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS kafka_handler_effects (id BIGSERIAL PRIMARY KEY, "
					+ "message_key TEXT NOT NULL)");
			return new Handlers(jdbc);
		}

	}

	@KafkaListener(id = GROUP, topics = TOPIC, groupId = GROUP)
	static class Handlers {

		private final JdbcTemplate jdbc;

		Handlers(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaHandler
		@Idempotent
		public void on(String key) {
			this.jdbc.update("INSERT INTO kafka_handler_effects (message_key) VALUES (?)", key);
		}

	}

}
