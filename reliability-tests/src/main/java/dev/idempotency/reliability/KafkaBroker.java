package dev.idempotency.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;

/**
 * A standalone Kafka broker process in KRaft combined mode (broker and controller), on
 * ports picked at start, with its log directory kept across restarts.
 * <p>
 * It has a listener of its own for the workload, whose advertised address is given: a
 * client that bootstraps there is told to reach the broker at that address (the
 * workload's {@link NetworkProxy}), and reconnects to it after every fault. The driver's
 * own clients use the plain listener.
 * <p>
 * A broker alone is its own controller quorum and holds every topic once; a member of a
 * {@link KafkaCluster} is one of its voters, and the cluster's topics have three replicas,
 * two of which must acknowledge a write.
 */
final class KafkaBroker {

	private final Path directory;

	private final int nodeId;

	private final int port = Ports.free();

	private final int controllerPort;

	// the controller quorum: id@host:port of every voter
	private final String voters;

	private final int replicationFactor;

	private final int workloadPort = Ports.free();

	private final int advertisedWorkloadPort;

	private final JavaProcess process;

	/** A broker whose workload listener is advertised on its own port. */
	KafkaBroker(Path directory) throws IOException {
		this(directory, 0);
	}

	/**
	 * A broker whose workload listener is advertised at {@code advertisedWorkloadPort} of
	 * the loopback interface (0: its own port).
	 */
	KafkaBroker(Path directory, int advertisedWorkloadPort) throws IOException {
		this(directory, 1, Ports.free(), null, 1, Uuid.randomUuid().toString(), advertisedWorkloadPort);
	}

	/**
	 * A member of a cluster: node {@code nodeId}, whose controller listens on
	 * {@code controllerPort}, one of {@code voters}, all formatted with the same
	 * {@code clusterId}.
	 */
	KafkaBroker(Path directory, int nodeId, int controllerPort, String voters, int replicationFactor, String clusterId,
			int advertisedWorkloadPort) throws IOException {
		this.nodeId = nodeId;
		this.controllerPort = controllerPort;
		this.voters = (voters != null) ? voters : nodeId + "@127.0.0.1:" + controllerPort;
		this.replicationFactor = replicationFactor;
		this.advertisedWorkloadPort = (advertisedWorkloadPort != 0) ? advertisedWorkloadPort : this.workloadPort;
		this.directory = Files.createDirectories(directory);
		Path properties = directory.resolve("server.properties");
		Files.writeString(properties, serverProperties());
		Path logback = directory.resolve("logback.xml");
		Files.writeString(logback, """
				<configuration>
				  <appender name="out" class="ch.qos.logback.core.ConsoleAppender">
				    <encoder><pattern>%d %-5level %logger{36} - %msg%n</pattern></encoder>
				  </appender>
				  <root level="WARN"><appender-ref ref="out"/></root>
				</configuration>
				""");
		// three brokers share two cores with the rest of the run: a smaller heap each, and
		// the client compiler only, which starts three JVMs at once in much less CPU time
		List<String> options = (replicationFactor > 1)
				? List.of("-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
						"-Dlogback.configurationFile=" + logback)
				: List.of("-Xmx512m", "-XX:+UseSerialGC", "-Dlogback.configurationFile=" + logback);
		Path log = directory.resolve("broker.log");
		JavaProcess format = new JavaProcess("kafka-storage-format", options, "kafka.tools.StorageTool",
				List.of("format", "-t", clusterId, "-c", properties.toString()), log);
		format.start();
		if (format.waitFor(120) != 0) {
			throw new IllegalStateException("Formatting the Kafka log directory failed; see " + log);
		}
		this.process = new JavaProcess((replicationFactor > 1) ? "kafka-" + nodeId : "kafka", options, "kafka.Kafka",
				List.of(properties.toString()), log);
	}

	private String serverProperties() {
		int rf = this.replicationFactor;
		// a cluster's writes need two of three replicas, one more than a single broker
		int minIsr = Math.max(1, rf - 1);
		String properties = String.join("\n", "process.roles=broker,controller", "node.id=" + this.nodeId,
				"controller.quorum.voters=" + this.voters,
				"listeners=PLAINTEXT://127.0.0.1:" + this.port + ",WORKLOAD://127.0.0.1:" + this.workloadPort
						+ ",CONTROLLER://127.0.0.1:" + this.controllerPort,
				"advertised.listeners=PLAINTEXT://127.0.0.1:" + this.port + ",WORKLOAD://127.0.0.1:"
						+ this.advertisedWorkloadPort,
				"controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
				"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,WORKLOAD:PLAINTEXT,CONTROLLER:PLAINTEXT",
				"log.dirs=" + this.directory.resolve("data"), "auto.create.topics.enable=false",
				"offsets.topic.replication.factor=" + rf, "offsets.topic.num.partitions=3",
				"transaction.state.log.replication.factor=" + rf, "transaction.state.log.min.isr=" + minIsr,
				"share.coordinator.state.topic.replication.factor=" + rf,
				"share.coordinator.state.topic.min.isr=" + minIsr, "group.initial.rebalance.delay.ms=0",
				"group.min.session.timeout.ms=3000", "log.segment.bytes=67108864", "");
		if (rf == 1) {
			return properties;
		}
		return properties + String.join("\n", "default.replication.factor=" + rf, "min.insync.replicas=" + minIsr,
				// a killed broker is fenced, and leaves the in-sync replicas, within 3 s
				"broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=1000", "");
	}

	int nodeId() {
		return this.nodeId;
	}

	int replicationFactor() {
		return this.replicationFactor;
	}

	String bootstrapServers() {
		return "127.0.0.1:" + this.port;
	}

	/** The port of the workload's listener, which the broker advertises elsewhere. */
	int workloadPort() {
		return this.workloadPort;
	}

	void start() {
		launch();
		awaitReady();
	}

	/** Start the process without waiting: a cluster's member waits for its quorum. */
	void launch() {
		this.process.start();
	}

	/** A graceful stop (SIGTERM), as an operator's restart would do. */
	void stop() {
		this.process.stop(60);
	}

	/** SIGKILL, as a crash of the machine would do; the data directory stays. */
	void kill() {
		this.process.kill();
	}

	boolean isAlive() {
		return this.process.isAlive();
	}

	void createTopics(Map<String, Integer> partitions) throws Exception {
		createTopics(bootstrapServers(), partitions, this.replicationFactor);
	}

	Admin admin() {
		return admin(bootstrapServers());
	}

	/** Create topics of the given partitions, each with the given replicas. */
	static void createTopics(String bootstrapServers, Map<String, Integer> partitions, int replicationFactor)
			throws Exception {
		try (Admin admin = admin(bootstrapServers)) {
			admin.createTopics(partitions.entrySet()
				.stream()
				.map((topic) -> new NewTopic(topic.getKey(), topic.getValue(), (short) replicationFactor))
				.toList()).all().get(60, TimeUnit.SECONDS);
		}
	}

	/** An Admin client patient enough for a loaded machine. */
	static Admin admin(String bootstrapServers) {
		Properties properties = new Properties();
		properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
		properties.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
		properties.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
		return Admin.create(properties);
	}

	void awaitReady() {
		long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
		try (Admin admin = admin()) {
			while (System.nanoTime() < deadline) {
				if (!this.process.isAlive()) {
					throw new IllegalStateException("Kafka broker " + this.nodeId + " exited; see " + this.directory.resolve("broker.log"));
				}
				try {
					admin.describeCluster(new DescribeClusterOptions().timeoutMs(2000)).nodes().get(3, TimeUnit.SECONDS);
					return;
				}
				catch (Exception ex) {
					Thread.sleep(200);
				}
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		throw new IllegalStateException("The Kafka broker did not start in 120 s");
	}

}
