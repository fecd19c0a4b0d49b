package dev.idempotency.internal.outbox;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How {@link OutboxBatchSender} cuts a batch into waves, and where it puts the events that
 * must be sent alone.
 */
class OutboxBatchSenderWavesUnitTests {

	@Test
	void theNthWaveHoldsTheNthEventOfEveryKeyAndEventsWithoutAKeyGoFirst() {
		List<OutboxRecord> batch = List.of(event(1, "a"), event(2, "b"), event(3, "a"), event(4, null), event(5, "a"),
				event(6, "b"));
		assertThat(ids(OutboxBatchSender.waves(batch))).containsExactly(List.of(1L, 2L, 4L), List.of(3L, 6L),
				List.of(5L));
	}

	@Test
	void anEventToSendAloneGetsAWaveOfItsOwnAfterTheOthersOfItsWave() {
		List<List<OutboxRecord>> waves = OutboxBatchSender.waves(
				List.of(event(1, "a"), event(2, "b"), event(3, "c"), event(4, "a"), event(5, "b"), event(6, "a")));
		assertThat(ids(OutboxBatchSender.alone(waves, Set.of(2L, 3L, 4L)))).containsExactly(List.of(1L), List.of(2L),
				List.of(3L), List.of(5L), List.of(4L), List.of(6L));
	}

	@Test
	void everyEventOfAKeyStaysAfterTheEarlierOnesWhenSentAlone() {
		List<OutboxRecord> batch = List.of(event(1, "a"), event(2, "b"), event(3, "a"), event(4, "b"), event(5, "a"));
		List<List<OutboxRecord>> waves = OutboxBatchSender.alone(OutboxBatchSender.waves(batch), Set.of(1L, 4L));
		List<Long> order = waves.stream().flatMap(List::stream).map(OutboxRecord::id).toList();
		assertThat(order).filteredOn((id) -> id % 2 == 1).containsExactly(1L, 3L, 5L);
		assertThat(order).filteredOn((id) -> id % 2 == 0).containsExactly(2L, 4L);
	}

	@Test
	void withNothingToSendAloneTheWavesAreUnchanged() {
		List<List<OutboxRecord>> waves = OutboxBatchSender.waves(List.of(event(1, "a"), event(2, "b")));
		assertThat(OutboxBatchSender.alone(waves, Set.of())).isSameAs(waves);
	}

	private static List<List<Long>> ids(List<List<OutboxRecord>> waves) {
		return waves.stream().map((wave) -> wave.stream().map(OutboxRecord::id).toList()).toList();
	}

	private static OutboxRecord event(long id, @Nullable String key) {
		return new OutboxRecord(1, id, UUID.randomUUID(), key, "topic", new byte[0], Map.of(), null, null, 0,
				Instant.EPOCH);
	}

}
