package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.outbox.OutboxMetrics;
import dev.idempotency.outbox.OutboxStats;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.mock.MockProducerFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What {@link OutboxBatchSender} records as an event's latency: the time from its commit
 * to the broker's acknowledgment, whenever the relay gets round to looking at it.
 */
class OutboxBatchSenderLatencyUnitTests {

	@Test
	void theLatencyEndsAtTheAcknowledgmentNotWhenTheRelayLooksAtIt() throws Exception {
		MockProducer<String, byte[]> producer = new MockProducer<>(false, null, new StringSerializer(),
				new ByteArraySerializer());
		List<Duration> latencies = new CopyOnWriteArrayList<>();
		OutboxBatchSender sender = new OutboxBatchSender(new KafkaTemplate<>(new MockProducerFactory<>(() -> producer)),
				settings(), metrics(latencies));
		OutboxRecord event = new OutboxRecord(0, 1, UUID.randomUUID(), "key", "topic", new byte[0], Map.of(), null, null,
				0, Instant.now());
		OutboxBatchSender.Sending sending = sender.begin(List.of(event));
		assertThat(producer.completeNext()).isTrue();
		// the relay reads the stream on for a while before it finishes the batch
		Thread.sleep(500);
		OutboxBatchSender.Outcome outcome = sender.finish(sending);
		assertThat(outcome.sent).containsExactly(1L);
		assertThat(latencies).singleElement().satisfies((latency) -> assertThat(latency).isLessThan(Duration.ofMillis(400)));
	}

	private static OutboxSettings settings() {
		return new OutboxSettings(100, Duration.ofMillis(100), Duration.ofSeconds(60), Duration.ofSeconds(10), 3,
				Duration.ofSeconds(1), 2, Duration.ofMinutes(1), 0, true, Duration.ofDays(1), Duration.ofSeconds(10),
				Duration.ofSeconds(1), false);
	}

	private static OutboxMetrics metrics(List<Duration> latencies) {
		return new OutboxMetrics() {

			@Override
			public void published(String topic, Duration latency) {
				latencies.add(latency);
			}

			@Override
			public void failed(String topic, Throwable exception) {
			}

			@Override
			public void stats(OutboxStats stats) {
			}

		};
	}

}
