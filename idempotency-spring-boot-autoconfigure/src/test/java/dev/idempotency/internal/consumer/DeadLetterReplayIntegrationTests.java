package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The dead-letter round trip the README describes: a record that failed every attempt
 * goes to the dead-letter topic; replayed from there once the cause is fixed, by the
 * group's own dead-letter listener (group {@code <group>-dlt}), it is applied once in the
 * scope of the group that failed it, and a second replay of the dead-letter topic (or of
 * the main topic) applies nothing. Another service reading the dead-letter topic keeps
 * its own scope, even when its group's name starts with the failing group's.
 */
class DeadLetterReplayIntegrationTests {

	private static final String TOPIC = "it-dlt-replay";

	@Test
	void recordReplayedFromTheDeadLetterTopicIsAppliedOnce() {
		TestInfrastructure.createTopic(TOPIC, 1);
		TestInfrastructure.createTopic(TOPIC + "-dlt", 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class,
				TestApplications.WITHOUT_JPA)) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			Listener listener = context.getBean(Listener.class);
			String keyed = UUID.randomUUID() + "-keyed";
			String keyless = UUID.randomUUID() + "-keyless";
			listener.broken(keyed);
			listener.broken(keyless);
			TestKafka.send(TOPIC, 0, keyed, Map.of("X-Idempotency-Key", keyed));
			TestKafka.send(TOPIC, 0, keyless, Map.of());
			String keylessKey = TOPIC + "-0-" + (TestKafka.endOffset(new TopicPartition(TOPIC, 0)) - 1);
			TestKafka.awaitCommitted("dlt-main", new TopicPartition(TOPIC, 0), Duration.ofSeconds(30));
			await().atMost(Duration.ofSeconds(30))
				.untilAsserted(() -> assertThat(TestKafka.endOffset(new TopicPartition(TOPIC + "-dlt", 0))).isEqualTo(2));
			assertThat(effects(jdbc, keyed)).isZero();
			KafkaListenerEndpointRegistry registry = context.getBean(KafkaListenerEndpointRegistry.class);
			// another service reads the dead-letter topic first; its group's name starts with
			// the failing group's, but its suffix is not the one the dead-letter topic has
			registry.getListenerContainer("dlt-alerts").start();
			TopicPartition dltPartition = new TopicPartition(TOPIC + "-dlt", 0);
			TestKafka.awaitCommitted("dlt-main-alerts", dltPartition, Duration.ofSeconds(30));
			assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_messages WHERE consumer_group = "
					+ "'dlt-main-alerts' AND idempotency_key IN (?, ?)", Integer.class, keyed, keylessKey))
				.isEqualTo(2);
			// the cause is fixed; an operator replays the dead-letter topic
			listener.fixed();
			MessageListenerContainer replayer = registry.getListenerContainer("dlt-replayer");
			replayer.start();
			TopicPartition dlt = new TopicPartition(TOPIC + "-dlt", 0);
			TestKafka.awaitCommitted("dlt-main-dlt", dlt, Duration.ofSeconds(30));
			assertThat(effects(jdbc, keyed)).isEqualTo(1);
			assertThat(effects(jdbc, keyless)).isEqualTo(1);
			// and replays both topics again from the start
			replayer.stop();
			MessageListenerContainer main = registry.getListenerContainer("dlt-main");
			main.stop();
			TestKafka.resetOffset("dlt-main-dlt", dlt, 0);
			TestKafka.resetOffset("dlt-main", new TopicPartition(TOPIC, 0), 0);
			replayer.start();
			main.start();
			TestKafka.awaitCommitted("dlt-main-dlt", dlt, Duration.ofSeconds(30));
			TestKafka.awaitCommitted("dlt-main", new TopicPartition(TOPIC, 0), Duration.ofSeconds(30));
			assertThat(effects(jdbc, keyed)).isEqualTo(1);
			assertThat(effects(jdbc, keyless)).isEqualTo(1);
			// a service of its own that reads the dead-letter topic claims in its own scope
			registry.getListenerContainer("dlt-notifier").start();
			TestKafka.awaitCommitted("dlt-notifier", dlt, Duration.ofSeconds(30));
			assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_messages WHERE consumer_group = "
					+ "'dlt-notifier' AND idempotency_key IN (?, ?)", Integer.class, keyed, keylessKey))
				.isEqualTo(2);
		}
	}

	private static int effects(JdbcTemplate jdbc, String value) {
		return jdbc.queryForObject("SELECT count(*) FROM dlt_effects WHERE message = ?", Integer.class, value);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS dlt_effects (id BIGSERIAL PRIMARY KEY, message TEXT NOT NULL)");
			return new Listener(jdbc);
		}

		@Bean
		DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
			return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template), new FixedBackOff(0, 1));
		}

	}

	static class Listener {

		private final Set<String> broken = ConcurrentHashMap.newKeySet();

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		public void broken(String value) {
			this.broken.add(value);
		}

		public void fixed() {
			this.broken.clear();
		}

		@KafkaListener(id = "dlt-main", topics = TOPIC, groupId = "dlt-main")
		@Idempotent
		public void on(String value) {
			apply(value);
		}

		@KafkaListener(id = "dlt-replayer", topics = TOPIC + "-dlt", groupId = "dlt-main-dlt", autoStartup = "false")
		@Idempotent
		public void replay(String value) {
			apply(value);
		}

		@KafkaListener(id = "dlt-alerts", topics = TOPIC + "-dlt", groupId = "dlt-main-alerts",
				autoStartup = "false")
		@Idempotent
		public void alert(String value) {
		}

		@KafkaListener(id = "dlt-notifier", topics = TOPIC + "-dlt", groupId = "dlt-notifier", autoStartup = "false")
		@Idempotent
		public void notifyOf(String value) {
		}

		private void apply(String value) {
			this.jdbc.update("INSERT INTO dlt_effects (message) VALUES (?)", value);
			if (this.broken.contains(value)) {
				throw new IllegalStateException("Broken until fixed");
			}
		}

	}

}
