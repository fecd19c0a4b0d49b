package dev.idempotency.test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.function.Predicate;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads a topic from the beginning, for tests that check what was published.
 */
public final class TestConsumer implements AutoCloseable {

	private final KafkaConsumer<String, String> consumer;

	private final List<ConsumerRecord<String, String>> received = new ArrayList<>();

	public TestConsumer(String bootstrapServers, String topic) {
		Properties properties = new Properties();
		properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
		properties.put(ConsumerConfig.GROUP_ID_CONFIG, "test-" + UUID.randomUUID());
		properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
		this.consumer = new KafkaConsumer<>(properties, new StringDeserializer(), new StringDeserializer());
		this.consumer.subscribe(List.of(topic));
	}

	public TestConsumer(String topic) {
		this(TestInfrastructure.kafkaBootstrapServers(), topic);
	}

	/**
	 * Poll until at least the given number of records arrived or the time is up, then a
	 * little longer to catch any extra ones.
	 * @param count the number expected
	 * @param timeout how long to wait at most
	 * @return all records received so far
	 */
	public List<ConsumerRecord<String, String>> receive(int count, Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (this.received.size() < count && System.nanoTime() < deadline) {
			this.consumer.poll(Duration.ofMillis(100)).forEach(this.received::add);
		}
		this.consumer.poll(Duration.ofMillis(300)).forEach(this.received::add);
		return this.received;
	}

	/**
	 * Poll until the records received so far satisfy a condition or the time is up: for
	 * records that may arrive more than once (a send retried after its timeout), where a
	 * count says nothing.
	 * @param done whether all that is awaited arrived
	 * @param timeout how long to wait at most
	 * @return all records received so far
	 */
	public List<ConsumerRecord<String, String>> receiveUntil(Predicate<List<ConsumerRecord<String, String>>> done,
			Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (!done.test(this.received) && System.nanoTime() < deadline) {
			this.consumer.poll(Duration.ofMillis(100)).forEach(this.received::add);
		}
		return this.received;
	}

	public static String header(ConsumerRecord<?, ?> record, String name) {
		Header header = record.headers().lastHeader(name);
		return (header != null) ? new String(header.value(), StandardCharsets.UTF_8) : null;
	}

	@Override
	public void close() {
		this.consumer.close();
	}

}
