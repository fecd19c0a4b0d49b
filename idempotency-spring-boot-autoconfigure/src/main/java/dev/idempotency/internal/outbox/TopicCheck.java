package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

import dev.idempotency.internal.outbox.ReplicationDelivery.Pause;
import org.apache.commons.logging.Log;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.jspecify.annotations.Nullable;

import org.springframework.kafka.core.KafkaTemplate;

/**
 * Tells a topic the Kafka cluster does not have from a cluster that does not answer. A
 * producer's send to a missing topic fails as a send to an unreachable broker does (no
 * metadata before {@code max.block.ms}), and the replication relay holds the stream for
 * the latter; asked after such failures, the cluster's answer lets it park the events of a
 * missing topic instead, and lets either relay fail the topic's next events without a send
 * that would block for {@code max.block.ms}. A topic counts as missing only when the cluster says so
 * ({@code UnknownTopicOrPartitionException}, or a name it refuses); a cluster that does
 * not answer in time, or may not be asked, leaves the relay treating the failure as an
 * outage, as before. It has as long to answer as a send has to find a topic's metadata
 * ({@code max.block.ms}), at most 5 s. A topic found missing is taken as missing for a
 * second, then asked about again. Safe to use from several threads.
 */
final class TopicCheck implements AutoCloseable {

	private static final Duration STEP = Duration.ofMillis(50);

	private static final Duration LONGEST_TIMEOUT = Duration.ofSeconds(5);

	/** How long a topic found missing is taken as missing without asking again. */
	private static final long FRESH_NANOS = Duration.ofSeconds(1).toNanos();

	private static final long WARN_EVERY_NANOS = Duration.ofMinutes(1).toNanos();

	private final Map<String, Object> configs;

	private final Duration timeout;

	private final Log logger;

	/** The topics found missing, and when. */
	private final Map<String, Long> missing = new ConcurrentHashMap<>();

	private @Nullable Admin admin;

	private volatile long warnedAt = System.nanoTime() - WARN_EVERY_NANOS;

	/**
	 * Create a check that asks the cluster of the given producer configuration.
	 * @param producerConfigs the relay's producer configuration: its bootstrap servers,
	 * security and the other settings an admin client shares with it are used, and its
	 * {@code max.block.ms} bounds the wait for an answer
	 * @param logger the relay's log
	 */
	TopicCheck(Map<String, Object> producerConfigs, Log logger) {
		this.logger = logger;
		Map<String, Object> configs = new HashMap<>();
		Set<String> names = AdminClientConfig.configNames();
		producerConfigs.forEach((name, value) -> {
			if (names.contains(name) && !AdminClientConfig.CLIENT_ID_CONFIG.equals(name)) {
				configs.put(name, value);
			}
		});
		this.configs = configs;
		this.timeout = timeout(producerConfigs.get(ProducerConfig.MAX_BLOCK_MS_CONFIG));
	}

	/**
	 * Create a check that asks the cluster the given template's producers send to.
	 * @param kafka the relay's template
	 * @param logger the relay's log
	 * @return the check; one that never finds a topic missing when the template's producer
	 * factory does not tell its configuration
	 */
	static TopicCheck of(KafkaTemplate<?, ?> kafka, Log logger) {
		Map<String, Object> configs;
		try {
			configs = kafka.getProducerFactory().getConfigurationProperties();
		}
		catch (RuntimeException ex) {
			// without a configuration the admin client cannot be created: every question
			// goes unanswered, and the sends tell, as without the check
			configs = Map.of();
		}
		return new TopicCheck((configs != null) ? configs : Map.of(), logger);
	}

	private static Duration timeout(@Nullable Object maxBlock) {
		try {
			long millis = (maxBlock != null) ? Long.parseLong(maxBlock.toString().trim()) : Long.MAX_VALUE;
			return (millis > 0 && millis < LONGEST_TIMEOUT.toMillis()) ? Duration.ofMillis(millis) : LONGEST_TIMEOUT;
		}
		catch (NumberFormatException ex) {
			return LONGEST_TIMEOUT;
		}
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
			unanswered(topics, ex.toString());
			return Set.of();
		}
		long deadline = System.nanoTime() + this.timeout.toNanos();
		while (!answers.values().stream().allMatch(KafkaFuture::isDone) && System.nanoTime() - deadline < 0) {
			if (!pause.await(STEP)) {
				return Set.of();
			}
		}
		Set<String> found = new HashSet<>();
		Set<String> unanswered = new HashSet<>();
		answers.forEach((topic, answer) -> {
			Boolean exists = exists(answer);
			if (Boolean.TRUE.equals(exists)) {
				this.missing.remove(topic);
			}
			else if (Boolean.FALSE.equals(exists)) {
				found.add(topic);
				this.missing.put(topic, System.nanoTime());
			}
			else {
				// the sends will tell
				this.missing.remove(topic);
				unanswered.add(topic);
			}
		});
		if (!unanswered.isEmpty()) {
			unanswered(unanswered, "no answer within " + this.timeout);
		}
		return found;
	}

	/**
	 * Return whether any topic was found missing, and not found since.
	 * @return whether one was
	 */
	boolean anyFoundMissing() {
		return !this.missing.isEmpty();
	}

	/**
	 * Return those of the given topics that are missing: found so within the last second,
	 * or, when found so earlier, still so when the cluster is asked again.
	 * @param topics the topics
	 * @param pause waits while the cluster answers
	 * @return the missing ones
	 */
	Set<String> foundMissing(Collection<String> topics, Pause pause) {
		if (this.missing.isEmpty()) {
			return Set.of();
		}
		Set<String> found = new HashSet<>();
		Set<String> stale = new HashSet<>();
		long now = System.nanoTime();
		for (String topic : topics) {
			Long foundAt = this.missing.get(topic);
			if (foundAt != null) {
				((now - foundAt < FRESH_NANOS) ? found : stale).add(topic);
			}
		}
		if (!stale.isEmpty()) {
			found.addAll(missing(stale, pause));
		}
		return found;
	}

	/**
	 * Ask the cluster again about those of the given topics found missing before.
	 * @param topics the topics
	 * @param pause waits while the cluster answers
	 * @return those still missing; none when the cluster did not answer
	 */
	Set<String> stillMissing(Collection<String> topics, Pause pause) {
		if (this.missing.isEmpty()) {
			return Set.of();
		}
		Set<String> known = new HashSet<>(topics);
		known.retainAll(this.missing.keySet());
		return missing(known, pause);
	}

	// a cluster that cannot tell leaves the relay holding the stream for the topics'
	// events, as for an outage: said at WARN now and then
	private void unanswered(Collection<String> topics, String why) {
		long now = System.nanoTime();
		if (now - this.warnedAt >= WARN_EVERY_NANOS) {
			this.warnedAt = now;
			this.logger.warn("Could not ask the Kafka cluster whether topics " + topics + " exist (" + why + "); "
					+ "sends that fail for them are taken as an outage");
		}
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

	private synchronized Admin admin() {
		Admin admin = this.admin;
		if (admin == null) {
			admin = Admin.create(this.configs);
			this.admin = admin;
		}
		return admin;
	}

	@Override
	public synchronized void close() {
		Admin admin = this.admin;
		this.admin = null;
		this.missing.clear();
		if (admin != null) {
			admin.close(Duration.ZERO);
		}
	}

	// the topics of the given events
	static Set<String> topics(List<OutboxRecord> events) {
		if (events.isEmpty()) {
			return Set.of();
		}
		Set<String> topics = new HashSet<>();
		events.forEach((event) -> topics.add(event.topic()));
		return topics;
	}

	/**
	 * Return the topics of the given events whose send failed for a reason of the broker
	 * or the network, which a missing topic gives too: the topics to ask about.
	 * @param events the events sent
	 * @param outcome what happened to them
	 * @return their topics
	 */
	static Set<String> transientTopics(List<OutboxRecord> events, OutboxBatchSender.Outcome outcome) {
		if (outcome.transientFailures.isEmpty()) {
			return Set.of();
		}
		Set<String> topics = new HashSet<>();
		events.forEach((event) -> {
			if (outcome.transientFailures.contains(event.id())) {
				topics.add(event.topic());
			}
		});
		return topics;
	}

}
