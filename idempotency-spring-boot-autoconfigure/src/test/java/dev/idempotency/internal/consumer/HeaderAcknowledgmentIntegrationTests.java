package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Headers;
import org.springframework.messaging.handler.annotation.Payload;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A listener can reach the container's acknowledgment without an {@link Acknowledgment}
 * parameter: as the {@link KafkaHeaders#ACKNOWLEDGMENT} header of a {@code Message<?>} or
 * of a {@code @Headers} map. It gets the deferred one there too, so that a {@code nack}
 * through it rolls the claim back with the work and the redelivery is applied.
 */
class HeaderAcknowledgmentIntegrationTests {

	private static final String MESSAGES = "it-header-nack-message";

	private static final String HEADERS = "it-header-nack-headers";

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Listener.class)
		.topics(MESSAGES, HEADERS)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=header_ack_effects",
				"spring.kafka.listener.ack-mode=manual",
				"spring.kafka.listener.poll-timeout=200ms");

	@ParameterizedTest
	@ValueSource(strings = { MESSAGES, HEADERS })
	void aNackThroughTheHeaderHandsTheRecordBackAndItsRedeliveryIsApplied(String topic) {
		String run = UUID.randomUUID().toString();
		Listener listener = app.bean(Listener.class);
		for (int i = 0; i < 3; i++) {
			listener.nackOnce(run + "-" + i);
			app.send(topic, run + "-" + i, run + "-" + i);
		}
		// acknowledged at once: its acknowledgment commits the offsets of the records before it
		app.send(topic, run + "-last", run + "-last");
		app.awaitCommitted(topic + "-group", topic);
		assertThat(effects(run + "-last")).isEqualTo(1);
		for (int i = 0; i < 3; i++) {
			assertThat(listener.nacked()).contains(run + "-" + i);
			assertThat(effects(run + "-" + i)).as("effects of record %d, whose offset is committed", i).isEqualTo(1);
		}
		assertThat(app.count("idempotency.messages", "outcome", "duplicate")).isZero();
	}

	private static int effects(String key) {
		return app.bean(TestEffects.class).count("listener", key);
	}

	static class Listener extends RecordingListener {

		private final Set<String> nackOnce = ConcurrentHashMap.newKeySet();

		private final Set<String> nacked = ConcurrentHashMap.newKeySet();

		public void nackOnce(String payload) {
			this.nackOnce.add(payload);
		}

		public Set<String> nacked() {
			return this.nacked;
		}

		@KafkaListener(topics = MESSAGES, groupId = MESSAGES + "-group")
		@Idempotent
		public void on(Message<String> message) {
			handle(message.getPayload(), message.getHeaders().get(KafkaHeaders.ACKNOWLEDGMENT, Acknowledgment.class));
		}

		@KafkaListener(topics = HEADERS, groupId = HEADERS + "-group")
		@Idempotent
		public void on(@Payload String payload, @Headers Map<String, Object> headers) {
			handle(payload, (Acknowledgment) headers.get(KafkaHeaders.ACKNOWLEDGMENT));
		}

		private void handle(String payload, Acknowledgment acknowledgment) {
			if (this.nackOnce.remove(payload)) {
				this.nacked.add(payload);
				// not ready yet (a downstream is unavailable, say): hand it back, apply nothing
				acknowledgment.nack(Duration.ofMillis(10));
				return;
			}
			effects().add("listener", payload);
			acknowledgment.acknowledge();
		}

	}

}
