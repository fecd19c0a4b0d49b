package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.aop.support.AopUtils;
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

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Handlers.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=kafka_handler_effects");

	@Test
	void appliesEachKeyOnceSkipsDuplicatesAndCommitsEveryOffset() {
		assertThat(AopUtils.isAopProxy(app.bean(Handlers.class))).isTrue();
		String run = UUID.randomUUID().toString();
		double duplicatesBefore = duplicates();
		for (int copy = 0; copy < 3; copy++) {
			for (int i = 0; i < 4; i++) {
				app.send(TOPIC, run + "-" + i, run + "-" + i);
			}
		}
		app.awaitCommitted(GROUP, TOPIC, Duration.ofSeconds(60));
		TestEffects effects = app.bean(TestEffects.class);
		for (int i = 0; i < 4; i++) {
			assertThat(effects.count(GROUP, run + "-" + i)).as("effects of key %d", i).isEqualTo(1);
			assertThat(TestEffects.processedKeys(app.jdbc(), GROUP, run + "-" + i)).as("claims of key %d", i)
				.isEqualTo(1);
		}
		assertThat(duplicates() - duplicatesBefore).isEqualTo(8.0);
	}

	private static double duplicates() {
		return app.count("idempotency.messages", "listener", "Handlers.on", "outcome", "duplicate");
	}

	@KafkaListener(id = GROUP, topics = TOPIC, groupId = GROUP)
	static class Handlers extends RecordingListener {

		@KafkaHandler
		@Idempotent
		public void on(String key) {
			effects().add(GROUP, key);
		}

	}

}
