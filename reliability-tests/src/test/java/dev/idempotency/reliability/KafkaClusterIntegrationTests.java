package dev.idempotency.reliability;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A cluster of three brokers: its topics have three replicas in sync and need two for a
 * write; a SIGKILL of a partition's leader moves the leadership to another broker while a
 * producer with {@code acks=all} keeps sending, and no acknowledged record is lost. (The
 * restart of a killed broker on its data, and its catching up, are the suite's: see
 * {@link BrokerKill}; a fourth JVM start would double this test's time on a loaded
 * machine.)
 */
class KafkaClusterIntegrationTests {

	private static final Path WORK = Path.of(System.getProperty("reliability.work-dir", "target/reliability"));

	private static final String TOPIC = "replicated";

	@Test
	void aKilledLeaderLosesItsLeadershipAndNoAcknowledgedRecord() throws Exception {
		Path directory = WORK.resolve("kafka-cluster");
		if (Files.exists(directory)) {
			try (Stream<Path> paths = Files.walk(directory)) {
				for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
					Files.delete(path);
				}
			}
		}
		KafkaCluster cluster = new KafkaCluster(directory, List.of(0, 0, 0));
		cluster.start();
		try (Admin admin = cluster.admin()) {
			cluster.createTopics(Map.of(TOPIC, 1));
			TopicPartitionInfo partition = KafkaCluster.describe(admin, List.of(TOPIC)).get(TOPIC).partitions().get(0);
			assertThat(partition.replicas()).hasSize(3);
			assertThat(cluster.awaitInSync(admin, List.of(TOPIC), Duration.ofSeconds(30))).isTrue();
			Config config = admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, TOPIC)))
				.all()
				.get(30, TimeUnit.SECONDS)
				.values()
				.iterator()
				.next();
			assertThat(config.get("min.insync.replicas").value()).isEqualTo("2");
			Set<String> acknowledged = ConcurrentHashMap.newKeySet();
			AtomicLong failed = new AtomicLong();
			AtomicBoolean sending = new AtomicBoolean(true);
			Thread sender = new Thread(() -> send(cluster.bootstrapServers(), acknowledged, failed, sending));
			sender.start();
			awaitAtLeast(acknowledged, 200);
			TopicPartition topicPartition = new TopicPartition(TOPIC, 0);
			int leader = KafkaCluster.leader(admin, topicPartition);
			KafkaBroker killed = cluster.broker(leader);
			killed.kill();
			int before = acknowledged.size();
			int newLeader = -1;
			long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
			while ((newLeader < 0 || newLeader == leader) && System.nanoTime() < deadline) {
				Thread.sleep(200);
				try {
					newLeader = KafkaCluster.leader(admin, topicPartition);
				}
				catch (Exception ex) {
					newLeader = -1;
				}
			}
			assertThat(newLeader).isPositive().isNotEqualTo(leader);
			// the producer goes on, with two replicas in sync
			awaitAtLeast(acknowledged, before + 200);
			TopicPartitionInfo after = KafkaCluster.describe(admin, List.of(TOPIC)).get(TOPIC).partitions().get(0);
			assertThat(after.isr()).hasSize(2).noneMatch((node) -> node.id() == leader);
			sending.set(false);
			sender.join(60_000);
			assertThat(failed).hasValue(0);
			assertThat(consumeAll(cluster.bootstrapServers())).containsAll(acknowledged);
		}
		finally {
			cluster.brokers().forEach(KafkaBroker::kill);
		}
	}

	private static void send(String bootstrapServers, Set<String> acknowledged, AtomicLong failed,
			AtomicBoolean sending) {
		Properties properties = new Properties();
		properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
		properties.put(ProducerConfig.ACKS_CONFIG, "all");
		properties.put(ProducerConfig.LINGER_MS_CONFIG, 5);
		try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties, new StringSerializer(),
				new StringSerializer())) {
			for (long i = 0; sending.get(); i++) {
				String value = Long.toString(i);
				producer.send(new ProducerRecord<>(TOPIC, value, value), (metadata, exception) -> {
					if (exception == null) {
						acknowledged.add(value);
					}
					else {
						failed.incrementAndGet();
					}
				});
				Thread.sleep(2);
			}
			producer.flush();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private static void awaitAtLeast(Set<String> acknowledged, int count) throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
		while (acknowledged.size() < count && System.nanoTime() < deadline) {
			Thread.sleep(50);
		}
		assertThat(acknowledged.size()).isGreaterThanOrEqualTo(count);
	}

	private static Set<String> consumeAll(String bootstrapServers) {
		Properties properties = new Properties();
		properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
		properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
		Set<String> values = new HashSet<>();
		TopicPartition partition = new TopicPartition(TOPIC, 0);
		try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(properties, new StringDeserializer(),
				new StringDeserializer())) {
			consumer.assign(List.of(partition));
			consumer.seekToBeginning(List.of(partition));
			long end = consumer.endOffsets(List.of(partition), Duration.ofSeconds(30)).get(partition);
			long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
			while (consumer.position(partition) < end && System.nanoTime() < deadline) {
				for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
					values.add(record.value());
				}
			}
		}
		return values;
	}

}
