package dev.idempotency.reliability;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;

/**
 * The Kafka brokers of a run: one {@link KafkaBroker}, or several in KRaft combined mode
 * (each a broker and one voter of the controller quorum) whose topics have three replicas
 * and need two in sync for a write ({@code min.insync.replicas=2}), so that one broker
 * may die and its partitions' leadership move to another.
 * <p>
 * Each broker advertises its workload listener at a port of its own (its
 * {@link NetworkProxy}); the driver's clients bootstrap from every broker's plain listener.
 */
final class KafkaCluster {

	private final List<KafkaBroker> brokers = new ArrayList<>();

	/**
	 * One broker per advertised workload port: a single broker in {@code directory}, or
	 * brokers 1..n in {@code directory/broker-<id>}.
	 */
	KafkaCluster(Path directory, List<Integer> advertisedWorkloadPorts) throws IOException {
		int size = advertisedWorkloadPorts.size();
		if (size == 1) {
			this.brokers.add(new KafkaBroker(directory, advertisedWorkloadPorts.get(0)));
			return;
		}
		List<Integer> controllerPorts = new ArrayList<>();
		for (int i = 0; i < size; i++) {
			controllerPorts.add(Ports.free());
		}
		StringBuilder voters = new StringBuilder();
		for (int i = 0; i < size; i++) {
			voters.append((i > 0) ? "," : "").append(i + 1).append("@127.0.0.1:").append(controllerPorts.get(i));
		}
		String clusterId = Uuid.randomUuid().toString();
		int replicationFactor = Math.min(3, size);
		// each formats its log directory in a JVM of its own: at once
		List<Future<KafkaBroker>> members = new ArrayList<>();
		ExecutorService formats = Executors.newFixedThreadPool(size);
		try {
			for (int i = 0; i < size; i++) {
				int id = i + 1;
				members.add(formats.submit(() -> new KafkaBroker(directory.resolve("broker-" + id), id,
						controllerPorts.get(id - 1), voters.toString(), replicationFactor, clusterId,
						advertisedWorkloadPorts.get(id - 1))));
			}
			for (Future<KafkaBroker> member : members) {
				this.brokers.add(member.get());
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IOException(ex);
		}
		catch (ExecutionException ex) {
			throw new IOException(ex.getCause());
		}
		finally {
			formats.shutdown();
		}
	}

	List<KafkaBroker> brokers() {
		return this.brokers;
	}

	/** The broker of a node id, which is its place in {@link #brokers()} plus one. */
	KafkaBroker broker(int nodeId) {
		return this.brokers.get(nodeId - 1);
	}

	int size() {
		return this.brokers.size();
	}

	String bootstrapServers() {
		return this.brokers.stream().map(KafkaBroker::bootstrapServers).collect(Collectors.joining(","));
	}

	/** Start every broker, then wait for each: a member waits for a quorum of voters. */
	void start() {
		this.brokers.forEach(KafkaBroker::launch);
		this.brokers.forEach(KafkaBroker::awaitReady);
	}

	/**
	 * Stop every broker (SIGTERM) at once, as an operator who stops the whole cluster
	 * would; a broker that cannot finish its controlled shutdown without the quorum is
	 * killed after 60 s.
	 */
	void stop() {
		List<Thread> stops = this.brokers.stream().map((broker) -> new Thread(broker::stop, "stop-kafka")).toList();
		stops.forEach(Thread::start);
		for (Thread stop : stops) {
			try {
				stop.join();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
		}
	}

	void createTopics(Map<String, Integer> partitions) throws Exception {
		KafkaBroker.createTopics(bootstrapServers(), partitions, this.brokers.get(0).replicationFactor());
	}

	Admin admin() {
		return KafkaBroker.admin(bootstrapServers());
	}

	/** The node id of the partition's leader, or -1 while it has none. */
	static int leader(Admin admin, TopicPartition partition) throws Exception {
		TopicPartitionInfo info = describe(admin, List.of(partition.topic())).get(partition.topic())
			.partitions()
			.get(partition.partition());
		return id(info.leader());
	}

	/** The node id of the group's coordinator, or -1 when it cannot be found now. */
	static int coordinator(Admin admin, String group) {
		try {
			Node node = admin.describeConsumerGroups(List.of(group), new DescribeConsumerGroupsOptions().timeoutMs(5000))
				.all()
				.get(10, TimeUnit.SECONDS)
				.get(group)
				.coordinator();
			return id(node);
		}
		catch (Exception ex) {
			return -1;
		}
	}

	static Map<String, TopicDescription> describe(Admin admin, Collection<String> topics) throws Exception {
		return admin.describeTopics(topics, new DescribeTopicsOptions().timeoutMs(5000))
			.allTopicNames()
			.get(10, TimeUnit.SECONDS);
	}

	/**
	 * Wait until every partition of the topics has all its replicas in sync again.
	 * @return whether they did within the timeout
	 */
	boolean awaitInSync(Admin admin, Collection<String> topics, Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (System.nanoTime() < deadline) {
			try {
				boolean inSync = describe(admin, topics).values()
					.stream()
					.flatMap((topic) -> topic.partitions().stream())
					.allMatch((partition) -> partition.isr().size() == partition.replicas().size()
							&& id(partition.leader()) >= 0);
				if (inSync) {
					return true;
				}
			}
			catch (Exception ex) {
				// a broker that is still starting: ask again
			}
			Thread.sleep(250);
		}
		return false;
	}

	private static int id(Node node) {
		return (node == null || node.isEmpty()) ? -1 : node.id();
	}

}
