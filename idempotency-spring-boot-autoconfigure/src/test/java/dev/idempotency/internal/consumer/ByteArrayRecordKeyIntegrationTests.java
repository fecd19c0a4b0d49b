package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code @Idempotent(key = "key")} on a consumer whose record keys are {@code byte[]}: the
 * key is read by its bytes, so a copy of a message gets the key of the first (not the
 * array's identity, new at every delivery) and is not applied again.
 */
class ByteArrayRecordKeyIntegrationTests {

	@Test
	void aCopyOfARecordKeyedByItsByteArrayRecordKeyIsAppliedOnce() {
		String topic = "it-bytes-record-key";
		TestApplication.with(Listener.class)
			.topics(topic)
			.properties(TestApplications.WITHOUT_JPA, "test.topic=" + topic,
					"spring.kafka.consumer.key-deserializer=org.apache.kafka.common.serialization.ByteArrayDeserializer")
			.run((app) -> {
				// the same message twice (a producer retry, a replay)
				TestKafka.sendAsync(new ProducerRecord<>(topic, 0, "order-1", "debit 10"));
				TestKafka.sendAsync(new ProducerRecord<>(topic, 0, "order-1", "debit 10"));
				TestKafka.flush();
				TestKafka.awaitCommitted(topic, new TopicPartition(topic, 0), Duration.ofSeconds(30));
				assertThat(app.bean(Listener.class).applied()).as("effects applied for key order-1").hasSize(1);
			});
	}

	static class Listener {

		private final List<String> applied = new CopyOnWriteArrayList<>();

		public List<String> applied() {
			return this.applied;
		}

		@KafkaListener(id = "bytes-record-key", topics = "${test.topic}", groupId = "${test.topic}")
		@Idempotent(key = "key")
		public void on(ConsumerRecord<byte[], String> record) {
			this.applied.add(record.value());
		}

	}

}
