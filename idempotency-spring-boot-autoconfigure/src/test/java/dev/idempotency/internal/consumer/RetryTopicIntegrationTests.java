package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.consumer.ListenerFixtures.FailFirst;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
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

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA);

	@Test
	void recordAppliedFromTheRetryTopicIsNotAppliedAgainByAReplay() {
		TestEffects effects = app.bean(TestEffects.class);
		FailFirst failFirst = app.bean(FailFirst.class);
		String run = UUID.randomUUID().toString();
		String keyed = run + "-keyed";
		String keyless = run + "-keyless";
		failFirst.failFirst(keyed);
		failFirst.failFirst(keyless);
		app.send(TOPIC, keyed, keyed);
		app.send(TOPIC, keyless, null);
		await().atMost(TestApplication.TIMEOUT).untilAsserted(() -> {
			assertThat(effects.count("retried", keyed)).isEqualTo(1);
			assertThat(effects.count("retried", keyless)).isEqualTo(1);
		});
		// the dead-letter topic stays empty
		List<MessageListenerContainer> containers = ListenerFixtures.containersWithRecords(app, "retried");
		assertThat(containers).hasSize(2);
		ListenerFixtures.awaitCommitted(app, containers);
		// replay every topic of the listener from the start
		ListenerFixtures.replay(app, containers);
		assertThat(effects.count("retried", keyed)).isEqualTo(1);
		assertThat(effects.count("retried", keyless)).isEqualTo(1);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		TestEffects effects(JdbcTemplate jdbc) {
			return new TestEffects(jdbc, "retried_effects");
		}

		@Bean
		FailFirst failFirst() {
			return new FailFirst();
		}

		@Bean
		Listener listener(TestEffects effects, FailFirst failFirst) {
			return new Listener(effects, failFirst);
		}

	}

	static class Listener {

		private final TestEffects effects;

		private final FailFirst failFirst;

		Listener(TestEffects effects, FailFirst failFirst) {
			this.effects = effects;
			this.failFirst = failFirst;
		}

		@RetryableTopic(attempts = "2", backOff = @BackOff(delay = 100), numPartitions = "1",
				replicationFactor = "1")
		@KafkaListener(id = "retried", topics = TOPIC, groupId = "retried")
		@Idempotent
		public void on(ConsumerRecord<String, String> record) {
			this.effects.add("retried", record.value());
			this.failFirst.failIfFirst(record, TOPIC);
		}

	}

}
