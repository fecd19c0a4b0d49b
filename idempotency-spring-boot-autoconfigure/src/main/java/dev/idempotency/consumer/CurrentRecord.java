package dev.idempotency.consumer;

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

	private CurrentRecord() {
	}

	static void set(ConsumerRecord<?, ?> record) {
		BATCH.remove();
		RECORD.set(record);
	}

	static void setBatch(ConsumerRecords<?, ?> records) {
		RECORD.remove();
		BATCH.set(records);
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
	}

}
