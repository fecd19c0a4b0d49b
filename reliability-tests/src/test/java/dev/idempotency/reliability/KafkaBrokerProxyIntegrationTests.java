package dev.idempotency.reliability;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Comparator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The workload reaches the Kafka broker only through its proxy: the broker advertises
 * the proxy on the workload's listener, so that a client that bootstrapped there
 * connects, and reconnects after its connections were reset, to the proxy, never to the
 * broker directly; the driver's clients, on the plain listener, are not affected by the
 * proxy's faults.
 */
class KafkaBrokerProxyIntegrationTests {

	private static final Path WORK = Path.of(System.getProperty("reliability.work-dir", "target/reliability"));

	@Test
	void clientsOfTheWorkloadListenerConnectAndReconnectThroughTheProxyOnly() throws Exception {
		Path directory = WORK.resolve("kafka-proxy");
		if (Files.exists(directory)) {
			try (Stream<Path> paths = Files.walk(directory)) {
				for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
					Files.delete(path);
				}
			}
		}
		try (NetworkProxy proxy = new NetworkProxy("kafka")) {
			KafkaBroker broker = new KafkaBroker(directory, proxy.port());
			proxy.start(broker.workloadPort());
			broker.start();
			try {
				broker.createTopics(Map.of("proxied", 1));
				String throughProxy = "127.0.0.1:" + proxy.port();
				assertThat(advertisedPort(throughProxy)).isEqualTo(proxy.port());
				assertThat(advertisedPort(broker.bootstrapServers()))
					.isEqualTo(Integer.parseInt(broker.bootstrapServers().split(":")[1]));
				try (KafkaProducer<String, String> workload = producer(throughProxy);
						KafkaProducer<String, String> driver = producer(broker.bootstrapServers())) {
					send(workload, "first");
					long accepted = proxy.stats().accepted();
					assertThat(proxy.dropConnections()).isPositive();
					// the client reconnects to the advertised address: the proxy
					send(workload, "after the reset");
					assertThat(proxy.stats().accepted()).isGreaterThan(accepted);
					proxy.blackHole();
					Future<RecordMetadata> held = workload.send(new ProducerRecord<>("proxied", "held"));
					assertThatExceptionOfType(TimeoutException.class).isThrownBy(() -> held.get(2, TimeUnit.SECONDS));
					assertThat(proxy.stats().heldBytes()).isPositive();
					send(driver, "around the black hole");
					proxy.heal();
					assertThat(held.get(30, TimeUnit.SECONDS).offset()).isEqualTo(3);
				}
			}
			finally {
				broker.stop();
			}
		}
	}

	private static int advertisedPort(String bootstrapServers) throws Exception {
		Properties properties = new Properties();
		properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
		try (Admin admin = Admin.create(properties)) {
			Collection<Node> nodes = admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
			assertThat(nodes).hasSize(1);
			return nodes.iterator().next().port();
		}
	}

	private static KafkaProducer<String, String> producer(String bootstrapServers) {
		Properties properties = new Properties();
		properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
		properties.put(ProducerConfig.ACKS_CONFIG, "all");
		// a request held longer than this is sent again: the record would be there twice
		properties.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 60_000);
		properties.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 90_000);
		return new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer());
	}

	private static void send(KafkaProducer<String, String> producer, String value) throws Exception {
		producer.send(new ProducerRecord<>("proxied", value)).get(30, TimeUnit.SECONDS);
	}

}
