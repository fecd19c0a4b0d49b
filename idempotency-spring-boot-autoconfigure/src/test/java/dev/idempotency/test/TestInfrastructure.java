package dev.idempotency.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.postgresql.PostgreSQLContainer;

import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * The real servers the integration tests talk to, started once per JVM: from
 * Testcontainers when a Docker engine answers, else embedded (zonky PostgreSQL and
 * spring-kafka's KRaft broker), always on random ports.
 */
public final class TestInfrastructure {

	private static Postgres postgres;

	private static String kafka;

	private TestInfrastructure() {
	}

	/**
	 * Connection settings of the PostgreSQL server.
	 * @return the settings
	 */
	public static synchronized Postgres postgres() {
		if (postgres == null) {
			postgres = docker() ? containerPostgres() : embeddedPostgres();
		}
		return postgres;
	}

	/**
	 * Bootstrap servers of the Kafka broker.
	 * @return the bootstrap servers
	 */
	public static synchronized String kafkaBootstrapServers() {
		if (kafka == null) {
			kafka = docker() ? containerKafka() : embeddedKafka();
		}
		return kafka;
	}

	/**
	 * Create a topic.
	 * @param name the topic
	 * @param partitions the number of partitions
	 */
	public static void createTopic(String name, int partitions) {
		createTopic(name, partitions, Map.of());
	}

	/**
	 * Create a topic with settings of its own.
	 * @param name the topic
	 * @param partitions the number of partitions
	 * @param configs the topic's settings, such as {@code max.message.bytes}
	 */
	public static void createTopic(String name, int partitions, Map<String, String> configs) {
		try (Admin admin = Admin.create(adminProperties())) {
			admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs))).all().get();
			// the controller has taken the topic; wait until each partition has a leader too,
			// so that a test's first sends do not fail for the broker's reasons
			long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
			while (!hasLeaders(admin, name) && System.nanoTime() - deadline < 0) {
				Thread.sleep(50);
			}
		}
		catch (Exception ex) {
			throw new IllegalStateException("Could not create topic " + name, ex);
		}
	}

	/**
	 * Change a setting of a topic.
	 * @param name the topic
	 * @param config the setting
	 * @param value its new value
	 */
	public static void alterTopic(String name, String config, String value) {
		try (Admin admin = Admin.create(adminProperties())) {
			admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, name),
					List.of(new AlterConfigOp(new ConfigEntry(config, value), AlterConfigOp.OpType.SET))))
				.all()
				.get();
		}
		catch (Exception ex) {
			throw new IllegalStateException("Could not change " + config + " of topic " + name, ex);
		}
	}

	private static boolean hasLeaders(Admin admin, String topic) throws InterruptedException {
		try {
			return admin.describeTopics(List.of(topic))
				.allTopicNames()
				.get()
				.get(topic)
				.partitions()
				.stream()
				.allMatch((partition) -> partition.leader() != null && !partition.leader().isEmpty());
		}
		catch (ExecutionException ex) {
			return false;
		}
	}

	private static Properties adminProperties() {
		Properties properties = new Properties();
		properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafkaBootstrapServers());
		return properties;
	}

	/**
	 * Spring Boot properties that connect an application to the servers.
	 * @return the properties
	 */
	public static Map<String, Object> springProperties() {
		Postgres pg = postgres();
		return Map.of("spring.datasource.url", pg.jdbcUrl(), "spring.datasource.username", pg.username(),
				"spring.datasource.password", pg.password(), "spring.kafka.bootstrap-servers",
				kafkaBootstrapServers(), "spring.kafka.consumer.auto-offset-reset", "earliest");
	}

	private static boolean docker() {
		try {
			return DockerClientFactory.instance().isDockerAvailable();
		}
		catch (RuntimeException ex) {
			return false;
		}
	}

	private static Postgres embeddedPostgres() {
		try {
			// wal_level = logical for the outbox's replication relay
			EmbeddedPostgres server = EmbeddedPostgres.builder()
				.setServerConfig("wal_level", "logical")
				.setServerConfig("max_replication_slots", "20")
				.setServerConfig("max_wal_senders", "20")
				.start();
			Runtime.getRuntime().addShutdownHook(new Thread(() -> {
				try {
					server.close();
				}
				catch (IOException ex) {
					// shutting down anyway
				}
			}));
			return new Postgres(server.getJdbcUrl("postgres", "postgres"), "postgres", "postgres");
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start embedded PostgreSQL", ex);
		}
	}

	@SuppressWarnings("resource")
	private static Postgres containerPostgres() {
		PostgreSQLContainer container = new PostgreSQLContainer("postgres:17-alpine");
		// wal_level = logical for the outbox's replication relay
		container.withCommand("postgres", "-c", "fsync=off", "-c", "wal_level=logical", "-c", "max_replication_slots=20",
				"-c", "max_wal_senders=20");
		container.start();
		return new Postgres(container.getJdbcUrl(), container.getUsername(), container.getPassword());
	}

	private static String embeddedKafka() {
		EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 1);
		broker.brokerProperty("group.initial.rebalance.delay.ms", "0");
		// topics exist only when a test creates them, so that a missing topic can fail a send
		broker.brokerProperty("auto.create.topics.enable", "false");
		// one broker: the transaction log of Kafka-transactional containers has one replica
		broker.brokerProperty("transaction.state.log.replication.factor", "1");
		broker.brokerProperty("transaction.state.log.min.isr", "1");
		broker.afterPropertiesSet();
		Runtime.getRuntime().addShutdownHook(new Thread(broker::destroy));
		return broker.getBrokersAsString();
	}

	@SuppressWarnings("resource")
	private static String containerKafka() {
		KafkaContainer container = new KafkaContainer("apache/kafka:4.1.1");
		container.start();
		return container.getBootstrapServers();
	}

	/**
	 * Connection settings of a PostgreSQL server.
	 *
	 * @param jdbcUrl the JDBC URL
	 * @param username the user
	 * @param password the password
	 */
	public record Postgres(String jdbcUrl, String username, String password) {
	}

}
