package dev.idempotency.internal.outbox;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Events in order split by the topics the Kafka cluster does not have (see
 * {@link TopicCheck}): those of such a topic that are the first of their key (or have
 * none), the later events of those keys, which wait behind them whatever their topic, and
 * the rest.
 *
 * @param missing the events of a missing topic, each the first of its key
 * @param heldBack the later events of those keys
 * @param rest the events to send
 */
record MissingTopicSplit(List<OutboxRecord> missing, List<OutboxRecord> heldBack, List<OutboxRecord> rest) {

	/**
	 * Split the given events.
	 * @param events the events, in the order they are to be published
	 * @param topics the missing topics
	 * @return the split
	 */
	static MissingTopicSplit of(List<OutboxRecord> events, Set<String> topics) {
		MissingTopicSplit split = new MissingTopicSplit(new ArrayList<>(), new ArrayList<>(),
				new ArrayList<>(events.size()));
		Set<String> blocked = new HashSet<>();
		for (OutboxRecord event : events) {
			if (event.key() != null && blocked.contains(event.key())) {
				split.heldBack.add(event);
			}
			else if (topics.contains(event.topic())) {
				split.missing.add(event);
				if (event.key() != null) {
					blocked.add(event.key());
				}
			}
			else {
				split.rest.add(event);
			}
		}
		return split;
	}

}
