package dev.idempotency.internal.consumer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link PollLookupGate}: the lookups stop after polls that found nothing, and start
 * again whenever duplicates may come.
 */
class PollLookupGateUnitTests {

	private static final TopicPartition P0 = new TopicPartition("gate", 0);

	private static final TopicPartition P1 = new TopicPartition("gate", 1);

	private final PollLookupGate gate = new PollLookupGate();

	@Test
	void closesAfterPollsThatFoundNothingAndOpensAgainWhenOneFindsAKey() {
		this.gate.polled(poll(P0, 0, 10));
		assertThat(this.gate.isOpen()).isTrue();
		this.gate.lookedUp(false);
		this.gate.polled(poll(P0, 10, 10));
		assertThat(this.gate.isOpen()).isTrue();
		this.gate.lookedUp(false);
		this.gate.polled(poll(P0, 20, 10));
		assertThat(this.gate.isOpen()).isFalse();
		this.gate.duplicateClaimed();
		assertThat(this.gate.isOpen()).isTrue();
		this.gate.lookedUp(true);
		assertThat(this.gate.isOpen()).isTrue();
	}

	@Test
	void opensWhenAPartitionDoesNotGoOnWhereItsLastPollEnded() {
		closeOn(P0);
		// the error handler's seek back, a reset of the group's offsets, a replay
		this.gate.polled(poll(P0, 5, 10));
		assertThat(this.gate.isOpen()).isTrue();
		closeOn(P0);
		// a rebalance that gave the partition to another consumer, which went on, and back
		this.gate.polled(poll(P0, 500, 10));
		assertThat(this.gate.isOpen()).isTrue();
	}

	@Test
	void opensForAPartitionThisConsumerDidNotReadBefore() {
		closeOn(P0);
		this.gate.polled(poll(P1, 70, 10));
		assertThat(this.gate.isOpen()).isTrue();
	}

	@Test
	void staysClosedWhilePartitionsGoOnWhereTheyEnded() {
		closeOn(P0);
		long next = this.nextOffset;
		for (int i = 0; i < 10; i++) {
			this.gate.polled(poll(P0, next, 50));
			next += 50;
			assertThat(this.gate.isOpen()).isFalse();
		}
	}

	private long nextOffset;

	private void closeOn(TopicPartition partition) {
		for (int i = 0; i < PollLookupGate.QUIET_POLLS; i++) {
			this.gate.polled(poll(partition, this.nextOffset, 10));
			this.nextOffset += 10;
			this.gate.lookedUp(false);
		}
		this.gate.polled(poll(partition, this.nextOffset, 10));
		this.nextOffset += 10;
		assertThat(this.gate.isOpen()).isFalse();
	}

	private static ConsumerRecords<String, String> poll(TopicPartition partition, long from, int count) {
		List<ConsumerRecord<String, String>> records = new ArrayList<>();
		for (long offset = from; offset < from + count; offset++) {
			records.add(new ConsumerRecord<>(partition.topic(), partition.partition(), offset, null, "v"));
		}
		Map<TopicPartition, List<ConsumerRecord<String, String>>> byPartition = new LinkedHashMap<>();
		byPartition.put(partition, records);
		return new ConsumerRecords<>(byPartition, Map.<TopicPartition, OffsetAndMetadata>of());
	}

}
