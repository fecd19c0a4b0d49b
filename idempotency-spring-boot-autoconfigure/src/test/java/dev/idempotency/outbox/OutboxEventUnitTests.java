package dev.idempotency.outbox;

import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * An event the relay could never send, or could only send changed, is refused when it is
 * published, in the caller's transaction: written, it would die after its attempts and
 * block the later events of its key.
 */
class OutboxEventUnitTests {

	@Test
	void refusesATopicNameKafkaWouldRefuse() {
		for (String topic : new String[] { "orders events", "orders/events", ".", "..", "t".repeat(250), "café" }) {
			assertThatIllegalArgumentException().as(topic)
				.isThrownBy(() -> OutboxEvent.builder(topic, "k", "payload").build())
				.withMessageContaining("topic");
		}
		assertThat(OutboxEvent.builder("orders.events_v2-" + "t".repeat(232), "k", "payload").build().topic())
			.hasSize(249);
	}

	@Test
	void refusesAKeyTheOutboxTableCannotHold() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> OutboxEvent.builder("orders", "k".repeat(256), "payload").build())
			.withMessageContaining("key")
			.withMessageContaining("255");
		// 255 characters, each two UTF-16 code units: the column counts characters
		assertThat(OutboxEvent.builder("orders", "😀".repeat(255), "payload").build().key()).hasSize(510);
	}

	@Test
	void refusesTextThatWouldBeStoredChanged() {
		// PostgreSQL text holds no NUL, and UTF-8 has no form for a lone surrogate (the
		// driver would write '?': another key, another order)
		for (String key : new String[] { "k\u0000", "k\uD800", "\uDC00k" }) {
			assertThatIllegalArgumentException().isThrownBy(() -> OutboxEvent.builder("orders", key, "p").build())
				.withMessageContaining("key");
		}
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new OutboxEvent("orders", "k", "p", Map.of("trace", "a\u0000b"), null, null))
			.withMessageContaining("header trace");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> OutboxEvent.builder("orders", "k", "p").type("t".repeat(256)).build())
			.withMessageContaining("type");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> OutboxEvent.builder("orders", "k", "p").aggregateType("a\uD800").build())
			.withMessageContaining("aggregate type");
	}

	@Test
	void acceptsAKeylessEvent() {
		assertThat(OutboxEvent.builder("orders", null, "payload").build().key()).isNull();
	}

}
