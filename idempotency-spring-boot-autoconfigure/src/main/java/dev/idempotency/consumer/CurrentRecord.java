package dev.idempotency.consumer;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * The record being delivered on the current consumer thread, so that a listener method
 * whose parameters carry only the payload can still be given its key and coordinates.
 */
final class CurrentRecord {

	private static final ThreadLocal<ConsumerRecord<?, ?>> RECORD = new ThreadLocal<>();

	private CurrentRecord() {
	}

	static void set(ConsumerRecord<?, ?> record) {
		RECORD.set(record);
	}

	static @Nullable ConsumerRecord<?, ?> get() {
		return RECORD.get();
	}

	static void clear() {
		RECORD.remove();
	}

}
