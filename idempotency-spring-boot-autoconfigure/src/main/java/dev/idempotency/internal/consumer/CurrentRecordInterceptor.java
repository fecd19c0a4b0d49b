package dev.idempotency.internal.consumer;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.kafka.listener.RecordInterceptor;

/**
 * Binds each record to the consumer thread for the duration of its delivery. Added last
 * to the container factory's interceptors, so it sees the record the listener receives.
 */
final class CurrentRecordInterceptor implements RecordInterceptor<Object, Object> {

	@Override
	public @Nullable ConsumerRecord<Object, Object> intercept(ConsumerRecord<Object, Object> record,
			Consumer<Object, Object> consumer) {
		CurrentRecord.set(record);
		return record;
	}

	@Override
	public void afterRecord(ConsumerRecord<Object, Object> record, Consumer<Object, Object> consumer) {
		CurrentRecord.clear();
	}

	@Override
	public void clearThreadState(Consumer<?, ?> consumer) {
		CurrentRecord.clear();
	}

}
