package dev.idempotency.internal.consumer;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntUnaryOperator;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;

/**
 * The shapes a batch listener can take its batch in: the records behind the argument, the
 * argument rebuilt with some records only, and positions mapped back to what the container
 * delivered.
 */
final class BatchShapes {

	private BatchShapes() {
	}

	/**
	 * Map positions in the records the interceptor works on to the batch the container
	 * delivered: the same, except for a List of payloads behind the factory's record
	 * filter, where the container still counts the records the filter removed.
	 */
	static IntUnaryOperator containerIndexes(ListenerMethod method, List<ConsumerRecord<?, ?>> records) {
		ConsumerRecords<?, ?> delivered = CurrentRecord.batch();
		if (method.batchKind() != ListenerMethod.BatchKind.PAYLOAD_LIST || CurrentRecord.filteredBatch() == null
				|| delivered == null || delivered.count() == records.size()) {
			return IntUnaryOperator.identity();
		}
		Map<ConsumerRecord<?, ?>, Integer> positions = new IdentityHashMap<>();
		int position = 0;
		for (ConsumerRecord<?, ?> record : delivered) {
			positions.put(record, position++);
		}
		int[] indexes = new int[records.size()];
		for (int i = 0; i < indexes.length; i++) {
			Integer index = positions.get(records.get(i));
			if (index == null) {
				throw new IllegalStateException("A record that passed the filter of " + method.name()
						+ " is not in the batch the container delivered");
			}
			indexes[i] = index;
		}
		return (i) -> indexes[i];
	}

	static List<ConsumerRecord<?, ?>> records(ListenerMethod method, Object batch) {
		List<ConsumerRecord<?, ?>> records = new ArrayList<>();
		switch (method.batchKind()) {
			case RECORD_LIST -> ((List<?>) batch).forEach((record) -> records.add((ConsumerRecord<?, ?>) record));
			case CONSUMER_RECORDS -> ((ConsumerRecords<?, ?>) batch).forEach(records::add);
			default -> {
				List<? extends ConsumerRecord<?, ?>> filtered = CurrentRecord.filteredBatch();
				ConsumerRecords<?, ?> bound = CurrentRecord.batch();
				if (filtered != null) {
					records.addAll(filtered);
				}
				else if (bound != null) {
					bound.forEach(records::add);
				}
				if (records.size() != ((List<?>) batch).size()) {
					throw new IllegalStateException("The batch of " + method.name() + " has " + ((List<?>) batch).size()
							+ " payloads for " + records.size() + " records, so they cannot be matched (a record "
							+ "filter the starter does not know of?); take List<ConsumerRecord> instead");
				}
			}
		}
		return records;
	}

	@SuppressWarnings({ "unchecked", "rawtypes" })
	static Object filtered(ListenerMethod method, Object batch, List<ConsumerRecord<?, ?>> records,
			@Nullable List<?> payloads, List<Integer> kept) {
		switch (method.batchKind()) {
			case CONSUMER_RECORDS -> {
				Map<TopicPartition, List<ConsumerRecord>> byPartition = new LinkedHashMap<>();
				for (int index : kept) {
					ConsumerRecord<?, ?> record = records.get(index);
					byPartition.computeIfAbsent(new TopicPartition(record.topic(), record.partition()),
							(partition) -> new ArrayList<>())
						.add(record);
				}
				return new ConsumerRecords(byPartition, ((ConsumerRecords<?, ?>) batch).nextOffsets());
			}
			case RECORD_LIST -> {
				List<Object> filtered = new ArrayList<>(kept.size());
				kept.forEach((index) -> filtered.add(records.get(index)));
				return filtered;
			}
			default -> {
				List<Object> filtered = new ArrayList<>(kept.size());
				kept.forEach((index) -> filtered.add(payloads.get(index)));
				return filtered;
			}
		}
	}

}
