package dev.idempotency.internal.consumer;

import java.util.List;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.Nullable;

/**
 * The record (or batch of records) being delivered on the current consumer thread, so
 * that a listener method whose parameters carry only payloads can still be given keys
 * and coordinates.
 */
final class CurrentRecord {

	private static final ThreadLocal<ConsumerRecord<?, ?>> RECORD = new ThreadLocal<>();

	private static final ThreadLocal<ConsumerRecords<?, ?>> BATCH = new ThreadLocal<>();

	private static final ThreadLocal<List<? extends ConsumerRecord<?, ?>>> FILTERED_BATCH = new ThreadLocal<>();

	private CurrentRecord() {
	}

	static void set(ConsumerRecord<?, ?> record) {
		BATCH.remove();
		FILTERED_BATCH.remove();
		RECORD.set(record);
	}

	static void setBatch(ConsumerRecords<?, ?> records) {
		RECORD.remove();
		FILTERED_BATCH.remove();
		BATCH.set(records);
	}

	/**
	 * Bind the records of the current batch that passed the container's record filter:
	 * those the listener receives.
	 */
	static void setFilteredBatch(List<? extends ConsumerRecord<?, ?>> records) {
		FILTERED_BATCH.set(records);
	}

	static @Nullable List<? extends ConsumerRecord<?, ?>> filteredBatch() {
		return FILTERED_BATCH.get();
	}

	static @Nullable ConsumerRecords<?, ?> batch() {
		return BATCH.get();
	}

	static @Nullable ConsumerRecord<?, ?> get() {
		return RECORD.get();
	}

	static void clear() {
		RECORD.remove();
		BATCH.remove();
		FILTERED_BATCH.remove();
	}

}
