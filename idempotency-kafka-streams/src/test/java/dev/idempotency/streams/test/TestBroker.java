package dev.idempotency.streams.test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * A real KRaft broker (spring-kafka's embedded one, on a random port), started once per
 * JVM, with the few client operations the integration tests need.
 */
public final class TestBroker {

	private static String bootstrapServers;

	private static KafkaProducer<String, String> producer;

	private TestBroker() {
	}

	/**
	 * Bootstrap servers of the broker, started on first use.
	 * @return the bootstrap servers
	 */
	public static synchronized String bootstrapServers() {
		if (bootstrapServers == null) {
			EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 1);
			broker.brokerProperty("group.initial.rebalance.delay.ms", "0");
			broker.brokerProperty("auto.create.topics.enable", "false");
			broker.brokerProperty("transaction.state.log.replication.factor", "1");
			broker.brokerProperty("transaction.state.log.min.isr", "1");
			broker.afterPropertiesSet();
			Runtime.getRuntime().addShutdownHook(new Thread(broker::destroy));
			bootstrapServers = broker.getBrokersAsString();
		}
		return bootstrapServers;
	}

	/**
	 * Create topics with fresh names.
	 * @param prefix the start of the names
	 * @param partitions the number of partitions
	 * @param names the ends of the names
	 * @return the full names, in order
	 */
	public static List<String> createTopics(String prefix, int partitions, String... names) {
		String unique = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
		List<String> topics = new ArrayList<>();
		List<NewTopic> newTopics = new ArrayList<>();
		for (String name : names) {
			topics.add(unique + "-" + name);
			newTopics.add(new NewTopic(unique + "-" + name, partitions, (short) 1));
		}
		Properties properties = new Properties();
		properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
		try (Admin admin = Admin.create(properties)) {
			admin.createTopics(newTopics).all().get();
		}
		catch (Exception ex) {
			throw new IllegalStateException("Could not create topics " + topics, ex);
		}
		return topics;
	}

	/**
	 * Send a record with an {@code X-Idempotency-Key} header and wait for its
	 * acknowledgment.
	 * @param topic the topic
	 * @param key the record key, which is also the idempotency key
	 * @param value the value
	 */
	public static void send(String topic, String key, String value) {
		ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, value);
		record.headers().add("X-Idempotency-Key", key.getBytes(StandardCharsets.UTF_8));
		try {
			producer().send(record).get();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
		catch (ExecutionException ex) {
			throw new IllegalStateException("Could not send to " + topic, ex.getCause());
		}
	}

	/**
	 * Read the committed records of a topic until {@code expected} have arrived, then a
	 * little longer to catch any extra one.
	 * @param topic the topic
	 * @param expected the number of records expected
	 * @param timeout how long to wait for them at most
	 * @return the values read, in partition order
	 */
	public static List<String> readCommitted(String topic, int expected, Duration timeout) {
		Properties properties = new Properties();
		properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
		properties.put(ConsumerConfig.GROUP_ID_CONFIG, "reader-" + UUID.randomUUID());
		properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
		properties.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
		List<String> values = new ArrayList<>();
		try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(properties, new StringDeserializer(),
				new StringDeserializer())) {
			consumer.subscribe(List.of(topic));
			long deadline = System.nanoTime() + timeout.toNanos();
			while (values.size() < expected && System.nanoTime() < deadline) {
				consumer.poll(Duration.ofMillis(200)).forEach((ConsumerRecord<String, String> r) -> values.add(r.value()));
			}
			long extra = System.nanoTime() + Duration.ofSeconds(1).toNanos();
			while (System.nanoTime() < extra) {
				consumer.poll(Duration.ofMillis(200)).forEach((ConsumerRecord<String, String> r) -> values.add(r.value()));
			}
		}
		return values;
	}

	/**
	 * Streams settings for a fresh application on the broker.
	 * @param applicationId the application id
	 * @param stateDir the state directory
	 * @return the settings
	 */
	public static Map<String, Object> streamsProperties(String applicationId, String stateDir) {
		return Map.of("application.id", applicationId, "bootstrap.servers", bootstrapServers(), "state.dir",
				stateDir, "commit.interval.ms", 100, "consumer.session.timeout.ms", 6000,
				"consumer.heartbeat.interval.ms", 500, "statestore.cache.max.bytes", 0);
	}

	private static synchronized KafkaProducer<String, String> producer() {
		if (producer == null) {
			Properties properties = new Properties();
			properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
			producer = new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer());
		}
		return producer;
	}

}
