package dev.idempotency.internal.consumer;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.Nullable;

import org.springframework.kafka.listener.BatchInterceptor;

/**
 * Binds each batch of records to the consumer thread for the duration of its delivery.
 * Added last to the container factory's batch interceptors, so it sees the batch the
 * listener receives.
 */
final class CurrentBatchInterceptor implements BatchInterceptor<Object, Object> {

	@Override
	public @Nullable ConsumerRecords<Object, Object> intercept(ConsumerRecords<Object, Object> records,
			Consumer<Object, Object> consumer) {
		CurrentRecord.setBatch(records);
		return records;
	}

	@Override
	public void success(ConsumerRecords<Object, Object> records, Consumer<Object, Object> consumer) {
		CurrentRecord.clear();
	}

	@Override
	public void failure(ConsumerRecords<Object, Object> records, Exception exception,
			Consumer<Object, Object> consumer) {
		CurrentRecord.clear();
	}

	@Override
	public void clearThreadState(Consumer<?, ?> consumer) {
		CurrentRecord.clear();
	}

}
