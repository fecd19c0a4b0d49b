package dev.idempotency.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * The broker kill: SIGKILL one broker of a {@link KafkaCluster}, chosen by what it holds
 * (see {@link FaultPlan#BROKER_KILL_TARGETS}), show that what it held moved to another
 * broker, start it again on the same data and ports after the fault's duration, and wait
 * until every replica is in sync again, so that the next kill finds two replicas of each
 * partition to write to.
 * <p>
 * The workload uses no Kafka transactions (its relay's producer is idempotent, not
 * transactional, and its listener container has no transaction manager), so there is no
 * transaction coordinator to kill: the third variant kills the leader of a partition of
 * {@link Ledger#EVENTS_TOPIC}, which the relay writes.
 */
final class BrokerKill {

	/** How long the victim may take to find. */
	private static final Duration LOOKUP_TIMEOUT = Duration.ofSeconds(10);

	/** How long a leadership may take to move after the kill (the broker session is 3 s). */
	private static final Duration MOVE_TIMEOUT = Duration.ofSeconds(20);

	/** How long the restarted broker may take to catch up. */
	private static final Duration IN_SYNC_TIMEOUT = Duration.ofSeconds(90);

	private static final Set<String> TOPICS = Set.of(TransferListeners.TOPIC, Ledger.EVENTS_TOPIC,
			Checker.DEAD_LETTER_TOPIC, "__consumer_offsets");

	private final KafkaCluster cluster;

	private final Consumer<String> log;

	BrokerKill(KafkaCluster cluster, Consumer<String> log) {
		this.cluster = cluster;
		this.log = log;
	}

	/**
	 * Kill a broker and start it again.
	 * @return whether the kill took effect: what the broker held moved to another broker
	 */
	boolean inject(FaultPlan.Fault fault) throws Exception {
		try (Admin admin = this.cluster.admin()) {
			int partition = (int) (fault.fraction() * FaultPlan.PARTITIONS);
			Holder holder = switch (fault.target()) {
				case 0 -> leaderOf(new TopicPartition(TransferListeners.TOPIC, partition));
				case 1 -> new Holder("the coordinator of group " + TransferListeners.GROUP,
						(client) -> KafkaCluster.coordinator(client, TransferListeners.GROUP));
				case 2 -> leaderOf(new TopicPartition(Ledger.EVENTS_TOPIC, partition));
				default -> null;
			};
			int victim;
			List<TopicPartition> led = new ArrayList<>();
			if (holder != null) {
				// a loaded machine may not answer the first time: ask for up to 10 s
				victim = holder.probe(admin);
				for (long deadline = System.nanoTime() + LOOKUP_TIMEOUT.toNanos(); victim < 0
						&& System.nanoTime() < deadline;) {
					Thread.sleep(500);
					victim = holder.probe(admin);
				}
			}
			else {
				victim = this.cluster.brokers().get((int) (fault.fraction() * this.cluster.size())).nodeId();
				led.addAll(ledBy(admin, victim));
			}
			if (victim < 0) {
				this.log.accept("broker kill: could not find " + holder.what() + " in "
						+ LOOKUP_TIMEOUT.toSeconds() + " s; not counted");
				return false;
			}
			String what = (holder != null) ? holder.what()
					: "drawn at random, the leader of " + led.size() + " partitions";
			KafkaBroker broker = this.cluster.broker(victim);
			long killed = System.nanoTime();
			broker.kill();
			this.log.accept("SIGKILL kafka broker " + victim + " (" + what + "), restart in "
					+ fault.duration().toMillis() + " ms");
			boolean moved = false;
			String evidence = "";
			while (!moved && System.nanoTime() - killed < MOVE_TIMEOUT.toNanos()) {
				Thread.sleep(200);
				if (holder != null) {
					int now = holder.probe(admin);
					moved = now >= 0 && now != victim;
					evidence = "moved to broker " + now;
				}
				else {
					List<TopicPartition> still = ledBy(admin, victim);
					boolean outOfSync = inSyncReplicaOf(admin, victim).isEmpty();
					moved = still.isEmpty() && outOfSync;
					evidence = "the leadership of " + led.size() + " partitions moved and the broker left every ISR";
				}
			}
			long took = (System.nanoTime() - killed) / 1_000_000;
			this.log.accept(moved ? "kafka broker " + victim + " killed: " + evidence + " in " + took + " ms"
					: "kafka broker " + victim + " killed: no leader move in " + took + " ms; not counted");
			Thread.sleep(Math.max(0, fault.duration().toMillis() - took));
			broker.start();
			long started = System.nanoTime();
			Set<String> topics = new HashSet<>(admin.listTopics(new ListTopicsOptions().listInternal(true))
				.names()
				.get());
			topics.retainAll(TOPICS);
			boolean inSync = this.cluster.awaitInSync(admin, topics, IN_SYNC_TIMEOUT);
			this.log.accept("kafka broker " + victim + " started again; "
					+ (inSync ? "every replica in sync after " + (System.nanoTime() - started) / 1_000_000 + " ms"
							: "replicas not in sync after " + IN_SYNC_TIMEOUT.toSeconds() + " s"));
			return moved;
		}
	}

	private static Holder leaderOf(TopicPartition partition) {
		return new Holder("the leader of " + partition, (admin) -> KafkaCluster.leader(admin, partition));
	}

	// the partitions of the run's topics that the broker leads
	private static List<TopicPartition> ledBy(Admin admin, int broker) {
		return partitions(admin, broker, true);
	}

	// the partitions whose in-sync replicas include the broker
	private static List<TopicPartition> inSyncReplicaOf(Admin admin, int broker) {
		return partitions(admin, broker, false);
	}

	private static List<TopicPartition> partitions(Admin admin, int broker, boolean leader) {
		List<TopicPartition> result = new ArrayList<>();
		try {
			KafkaCluster.describe(admin, List.of(TransferListeners.TOPIC, Ledger.EVENTS_TOPIC))
				.forEach((topic, description) -> {
					for (TopicPartitionInfo info : description.partitions()) {
						boolean holds = leader ? info.leader() != null && info.leader().id() == broker
								: info.isr().stream().anyMatch((node) -> node.id() == broker);
						if (holds) {
							result.add(new TopicPartition(topic, info.partition()));
						}
					}
				});
			return result;
		}
		catch (Exception ex) {
			// not answered now: as if the broker still held them
			return List.of(new TopicPartition("unknown", -1));
		}
	}

	private interface Probe {

		int holder(Admin admin) throws Exception;

	}

	private record Holder(String what, Probe probe) {

		int probe(Admin admin) {
			try {
				return this.probe.holder(admin);
			}
			catch (Exception ex) {
				return -1;
			}
		}

	}

}
