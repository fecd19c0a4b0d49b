package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import dev.idempotency.internal.outbox.ReplicationDelivery.Pause;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.jspecify.annotations.Nullable;

/**
 * Tells a topic the Kafka cluster does not have from a cluster that does not answer. A
 * producer's send to a missing topic fails as a send to an unreachable broker does (no
 * metadata before {@code max.block.ms}), and the replication relay holds the stream for
 * the latter; asked after such failures, the cluster's answer lets it park the events of a
 * missing topic instead. A topic counts as missing only when the cluster says so
 * ({@code UnknownTopicOrPartitionException}, or a name it refuses); a cluster that does
 * not answer in time, or may not be asked, leaves the relay treating the failure as an
 * outage, as before. Used by the relay's stream thread only.
 */
final class TopicCheck implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(OutboxReplicationRelay.class);

	private static final Duration STEP = Duration.ofMillis(50);

	private final Map<String, Object> configs;

	private final Duration timeout;

	/** The topics found missing at their last check. */
	private final Set<String> missing = new HashSet<>();

	private Admin admin;

	/**
	 * Create a check that asks the cluster of the given producer configuration.
	 * @param producerConfigs the relay's producer configuration: its bootstrap servers,
	 * security and the other settings an admin client shares with it are used
	 * @param timeout how long the cluster has to answer
	 */
	TopicCheck(Map<String, Object> producerConfigs, Duration timeout) {
		Map<String, Object> configs = new HashMap<>();
		Set<String> names = AdminClientConfig.configNames();
		producerConfigs.forEach((name, value) -> {
			if (names.contains(name) && !AdminClientConfig.CLIENT_ID_CONFIG.equals(name)) {
				configs.put(name, value);
			}
		});
		this.configs = configs;
		this.timeout = timeout;
	}

	/**
	 * Ask the cluster which of the given topics it does not have.
	 * @param topics the topics
	 * @param pause waits while the cluster answers, keeping the stream alive; answers
	 * {@code false} when the relay stops
	 * @return those the cluster said it does not have; none when it did not answer
	 */
	Set<String> missing(Collection<String> topics, Pause pause) {
		if (topics.isEmpty()) {
			return Set.of();
		}
		Map<String, KafkaFuture<TopicDescription>> answers;
		try {
			answers = admin().describeTopics(topics, new DescribeTopicsOptions().timeoutMs((int) this.timeout.toMillis()))
				.topicNameValues();
		}
		catch (RuntimeException ex) {
			logger.debug("Could not ask the Kafka cluster whether topics " + topics + " exist", ex);
			return Set.of();
		}
		long deadline = System.nanoTime() + this.timeout.toNanos();
		while (!answers.values().stream().allMatch(KafkaFuture::isDone) && System.nanoTime() - deadline < 0) {
			if (!pause.await(STEP)) {
				return Set.of();
			}
		}
		Set<String> found = new HashSet<>();
		answers.forEach((topic, answer) -> {
			Boolean exists = exists(answer);
			if (Boolean.TRUE.equals(exists)) {
				this.missing.remove(topic);
			}
			else if (Boolean.FALSE.equals(exists)) {
				found.add(topic);
				this.missing.add(topic);
			}
		});
		return found;
	}

	/**
	 * Return those of the given topics found missing at their last check.
	 * @param topics the topics
	 * @return the missing ones
	 */
	Set<String> foundMissing(Collection<String> topics) {
		if (this.missing.isEmpty()) {
			return Set.of();
		}
		Set<String> found = new HashSet<>(topics);
		found.retainAll(this.missing);
		return found;
	}

	/**
	 * Ask the cluster again about those of the given topics found missing at their last
	 * check.
	 * @param topics the topics
	 * @param pause waits while the cluster answers
	 * @return those still missing; none when the cluster did not answer
	 */
	Set<String> stillMissing(Collection<String> topics, Pause pause) {
		Set<String> known = foundMissing(topics);
		if (known.isEmpty()) {
			return known;
		}
		Set<String> found = missing(known, pause);
		// a cluster that did not answer: the sends will tell
		known.forEach((topic) -> {
			if (!found.contains(topic)) {
				this.missing.remove(topic);
			}
		});
		return found;
	}

	/**
	 * Return why an event of a missing topic is not sent.
	 * @param topic the topic
	 * @return the reason, for its {@code last_error}
	 */
	static String reason(String topic) {
		return "Topic " + topic + " does not exist in the Kafka cluster (describeTopics answered "
				+ UnknownTopicOrPartitionException.class.getSimpleName() + ")";
	}

	// whether the cluster said the topic exists, or that it does not; null without an answer
	private static @Nullable Boolean exists(KafkaFuture<TopicDescription> answer) {
		if (!answer.isDone()) {
			return null;
		}
		try {
			answer.get();
			return true;
		}
		catch (ExecutionException ex) {
			boolean missing = ex.getCause() instanceof UnknownTopicOrPartitionException
					|| ex.getCause() instanceof InvalidTopicException;
			return missing ? false : null;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return null;
		}
	}

	private Admin admin() {
		if (this.admin == null) {
			this.admin = Admin.create(this.configs);
		}
		return this.admin;
	}

	@Override
	public void close() {
		Admin admin = this.admin;
		this.admin = null;
		this.missing.clear();
		if (admin != null) {
			admin.close(Duration.ZERO);
		}
	}

	// the topics of the given events
	static Set<String> topics(List<OutboxRecord> events) {
		Set<String> topics = new HashSet<>();
		events.forEach((event) -> topics.add(event.topic()));
		return topics;
	}

}
