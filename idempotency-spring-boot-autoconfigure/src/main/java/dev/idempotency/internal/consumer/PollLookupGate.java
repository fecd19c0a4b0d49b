package dev.idempotency.internal.consumer;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

/**
 * Decides, per consumer thread, whether the next poll's keys are worth looking up in the
 * store's table. A consumer that reads new records finds none of them there: each lookup
 * would cost a statement and find nothing. So after {@value #QUIET_POLLS} polls in a row
 * whose lookup found nothing, the lookups stop, until something says that duplicates may
 * come: a partition this consumer did not read before (an assignment after a
 * rebalance), a poll of a partition that does not start where the last one ended (a
 * seek, a rewind, a replay, a retry of the error handler), or a duplicate found by a
 * claim (a producer's or relay's re-send). A skipped lookup only costs a duplicate its
 * transaction: the claim decides, as for a key the lookup did not find.
 */
final class PollLookupGate {

	static final int QUIET_POLLS = 2;

	private static final ThreadLocal<PollLookupGate> CURRENT = ThreadLocal.withInitial(PollLookupGate::new);

	private final Map<TopicPartition, Long> nextOffsets = new HashMap<>();

	private int quietPolls;

	static PollLookupGate current() {
		return CURRENT.get();
	}

	/**
	 * Note a poll: a partition new to this consumer, or one that does not go on where its
	 * last poll ended, opens the gate.
	 */
	void polled(ConsumerRecords<?, ?> records) {
		for (TopicPartition partition : records.partitions()) {
			List<? extends ConsumerRecord<?, ?>> polled = records.records(partition);
			if (polled.isEmpty()) {
				continue;
			}
			Long expected = this.nextOffsets.put(partition, polled.get(polled.size() - 1).offset() + 1);
			if (expected == null || expected != polled.get(0).offset()) {
				this.quietPolls = 0;
			}
		}
	}

	boolean isOpen() {
		return this.quietPolls < QUIET_POLLS;
	}

	void lookedUp(boolean foundAny) {
		this.quietPolls = foundAny ? 0 : this.quietPolls + 1;
	}

	void duplicateClaimed() {
		this.quietPolls = 0;
	}

}
