package dev.idempotency.benchmarks;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import org.springframework.kafka.core.ProducerFactory;

/**
 * What the broker takes from a plain {@code KafkaProducer} with the relay's producer
 * settings (idempotent, {@code acks=all}, the relay's linger), sending the outbox
 * benchmark's events from memory; and a check of per-key order on a topic the relay
 * published.
 */
final class ProducerBaseline {

	private static final String PADDING = "x".repeat(1024);

	private ProducerBaseline() {
	}

	/**
	 * The payload of the i-th event: its sequence number, padded to 1 KB.
	 */
	static String payload(int sequence) {
		String head = "seq-" + sequence + ":";
		return head + PADDING.substring(head.length());
	}

	static double eventsPerSecond(ProducerFactory<?, ?> application, String topic, int events, int keys) {
		Map<String, Object> configs = new HashMap<>(application.getConfigurationProperties());
		// as the relay's auto-configuration builds its producer
		configs.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
		configs.put(ProducerConfig.ACKS_CONFIG, "all");
		configs.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
		configs.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 0);
		List<ProducerRecord<String, byte[]>> records = new ArrayList<>(events);
		for (int i = 0; i < events; i++) {
			ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, "key-" + (i % keys),
					payload(i).getBytes(StandardCharsets.UTF_8));
			record.headers().add("X-Idempotency-Key", UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8));
			records.add(record);
		}
		try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(configs, new StringSerializer(),
				new ByteArraySerializer())) {
			// connected, metadata fetched and the client's code warmed up before the clock starts
			for (int i = 0; i < Math.min(events, 2000); i++) {
				producer.send(new ProducerRecord<>(topic, records.get(i).key(), records.get(i).value()));
			}
			producer.flush();
			producer.partitionsFor(topic);
			long begin = System.nanoTime();
			for (ProducerRecord<String, byte[]> record : records) {
				producer.send(record);
			}
			producer.flush();
			return events / ((System.nanoTime() - begin) / 1e9);
		}
	}

	/**
	 * Read a topic and count the events that arrived after a later event of their key, or
	 * twice.
	 */
	static long orderViolations(String bootstrapServers, String topic, int events) {
		Map<String, Object> configs = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
				ConsumerConfig.GROUP_ID_CONFIG, "order-check-" + UUID.randomUUID(),
				ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
		Map<String, Integer> last = new HashMap<>();
		long violations = 0;
		int received = 0;
		try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(configs, new StringDeserializer(),
				new StringDeserializer())) {
			consumer.subscribe(List.of(topic));
			long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
			while (received < events && System.nanoTime() < deadline) {
				for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
					received++;
					String value = record.value();
					int sequence = Integer.parseInt(value.substring(4, value.indexOf(':')));
					Integer previous = last.put(record.key(), sequence);
					if (previous != null && previous >= sequence) {
						violations++;
					}
				}
			}
		}
		if (received < events) {
			throw new IllegalStateException("Read " + received + " of " + events + " events from " + topic);
		}
		return violations;
	}

}
