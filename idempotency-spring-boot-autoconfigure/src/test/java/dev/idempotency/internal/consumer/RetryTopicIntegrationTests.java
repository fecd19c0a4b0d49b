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
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Non-blocking retries: a record retried from a retry topic is the same message as the
 * original, with the original's key and scope, so that a replay of the main topic (or of
 * the retry topic) applies nothing again.
 */
class RetryTopicIntegrationTests {

	private static final String TOPIC = "it-retried";

	@Test
	void recordAppliedFromTheRetryTopicIsNotAppliedAgainByAReplay() {
		TestInfrastructure.createTopic(TOPIC, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class,
				TestApplications.WITHOUT_JPA)) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			Listener listener = context.getBean(Listener.class);
			String run = UUID.randomUUID().toString();
			String keyed = run + "-keyed";
			String keyless = run + "-keyless";
			listener.failFirst(keyed);
			listener.failFirst(keyless);
			TestKafka.send(TOPIC, 0, keyed, Map.of("X-Idempotency-Key", keyed));
			TestKafka.send(TOPIC, 0, keyless, Map.of());
			await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
				assertThat(effects(jdbc, keyed)).isEqualTo(1);
				assertThat(effects(jdbc, keyless)).isEqualTo(1);
			});
			List<MessageListenerContainer> containers = context.getBean(KafkaListenerEndpointRegistry.class)
				.getListenerContainers()
				.stream()
				.filter((container) -> container.getListenerId().startsWith("retried"))
				// the dead-letter topic stays empty
				.filter((container) -> TestKafka.endOffset(partition(container)) > 0)
				.toList();
			assertThat(containers).hasSize(2);
			for (MessageListenerContainer container : containers) {
				TestKafka.awaitCommitted(container.getGroupId(), partition(container), Duration.ofSeconds(30));
			}
			// replay every topic of the listener from the start
			containers.forEach(MessageListenerContainer::stop);
			for (MessageListenerContainer container : containers) {
				TestKafka.resetOffset(container.getGroupId(), partition(container), 0);
			}
			containers.forEach(MessageListenerContainer::start);
			for (MessageListenerContainer container : containers) {
				TestKafka.awaitCommitted(container.getGroupId(), partition(container), Duration.ofSeconds(30));
			}
			assertThat(effects(jdbc, keyed)).isEqualTo(1);
			assertThat(effects(jdbc, keyless)).isEqualTo(1);
		}
	}

	private static TopicPartition partition(MessageListenerContainer container) {
		return new TopicPartition(container.getContainerProperties().getTopics()[0], 0);
	}

	private static int effects(JdbcTemplate jdbc, String value) {
		return jdbc.queryForObject("SELECT count(*) FROM retried_effects WHERE message = ?", Integer.class, value);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS retried_effects (id BIGSERIAL PRIMARY KEY, message TEXT NOT NULL)");
			return new Listener(jdbc);
		}

	}

	static class Listener {

		private final Set<String> failFirst = ConcurrentHashMap.newKeySet();

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		public void failFirst(String value) {
			this.failFirst.add(value);
		}

		@RetryableTopic(attempts = "2", backOff = @BackOff(delay = 100), numPartitions = "1",
				replicationFactor = "1")
		@KafkaListener(id = "retried", topics = TOPIC, groupId = "retried")
		@Idempotent
		public void on(ConsumerRecord<String, String> record) {
			this.jdbc.update("INSERT INTO retried_effects (message) VALUES (?)", record.value());
			if (record.topic().equals(TOPIC) && this.failFirst.remove(record.value())) {
				throw new IllegalStateException("The first delivery fails");
			}
		}

	}

}
