package dev.idempotency.internal.consumer;

import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
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

	private static final String DLT = TOPIC + "-dlt";

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC, DLT)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=dlt_effects");

	@Test
	void recordReplayedFromTheDeadLetterTopicIsAppliedOnce() {
		TestEffects effects = app.bean(TestEffects.class);
		Listener listener = app.bean(Listener.class);
		String keyed = UUID.randomUUID() + "-keyed";
		String keyless = UUID.randomUUID() + "-keyless";
		listener.broken(keyed);
		listener.broken(keyless);
		app.send(TOPIC, keyed, keyed);
		app.send(TOPIC, keyless, null);
		String keylessKey = TOPIC + "-0-" + (TestKafka.endOffset(new TopicPartition(TOPIC, 0)) - 1);
		app.awaitCommitted("dlt-main", TOPIC);
		await().atMost(TestApplication.TIMEOUT)
			.untilAsserted(() -> assertThat(TestKafka.endOffset(new TopicPartition(DLT, 0))).isEqualTo(2));
		assertThat(effects.count("dlt", keyed)).isZero();
		// another service reads the dead-letter topic first; its group's name starts with
		// the failing group's, but its suffix is not the one the dead-letter topic has
		app.container("dlt-alerts").start();
		app.awaitCommitted("dlt-main-alerts", DLT);
		assertThat(app.rows("SELECT count(*) FROM processed_messages WHERE consumer_group = "
				+ "'dlt-main-alerts' AND idempotency_key IN (?, ?)", keyed, keylessKey))
			.isEqualTo(2);
		// the cause is fixed; an operator replays the dead-letter topic
		listener.fixed();
		MessageListenerContainer replayer = app.container("dlt-replayer");
		replayer.start();
		app.awaitCommitted("dlt-main-dlt", DLT);
		assertThat(effects.count("dlt", keyed)).isEqualTo(1);
		assertThat(effects.count("dlt", keyless)).isEqualTo(1);
		// and replays both topics again from the start
		replayer.stop();
		MessageListenerContainer main = app.container("dlt-main");
		main.stop();
		TestKafka.resetOffset("dlt-main-dlt", new TopicPartition(DLT, 0), 0);
		TestKafka.resetOffset("dlt-main", new TopicPartition(TOPIC, 0), 0);
		replayer.start();
		main.start();
		app.awaitCommitted("dlt-main-dlt", DLT);
		app.awaitCommitted("dlt-main", TOPIC);
		assertThat(effects.count("dlt", keyed)).isEqualTo(1);
		assertThat(effects.count("dlt", keyless)).isEqualTo(1);
		// a service of its own that reads the dead-letter topic claims in its own scope
		app.container("dlt-notifier").start();
		app.awaitCommitted("dlt-notifier", DLT);
		assertThat(app.rows("SELECT count(*) FROM processed_messages WHERE consumer_group = "
				+ "'dlt-notifier' AND idempotency_key IN (?, ?)", keyed, keylessKey))
			.isEqualTo(2);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Listener.class)
	static class App {

		@Bean
		DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
			return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template), new FixedBackOff(0, 1));
		}

	}

	static class Listener extends RecordingListener {

		private final Set<String> broken = ConcurrentHashMap.newKeySet();

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

		@KafkaListener(id = "dlt-replayer", topics = DLT, groupId = "dlt-main-dlt", autoStartup = "false")
		@Idempotent
		public void replay(String value) {
			apply(value);
		}

		@KafkaListener(id = "dlt-alerts", topics = DLT, groupId = "dlt-main-alerts", autoStartup = "false")
		@Idempotent
		public void alert(String value) {
		}

		@KafkaListener(id = "dlt-notifier", topics = DLT, groupId = "dlt-notifier", autoStartup = "false")
		@Idempotent
		public void notifyOf(String value) {
		}

		// both listeners of the group apply the same effect: one count of it
		private void apply(String value) {
			effects().add("dlt", value);
			if (this.broken.contains(value)) {
				throw new IllegalStateException("Broken until fixed");
			}
		}

	}

}
