package dev.idempotency.internal.consumer;

import java.util.List;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import org.springframework.kafka.listener.adapter.RecordFilterStrategy;

/**
 * The application's {@link RecordFilterStrategy}, which also binds the records of a batch
 * that passed it to the consumer thread, so that a listener that takes a List of payloads
 * can be matched to the records they came from.
 */
final class BindingRecordFilterStrategy implements RecordFilterStrategy<Object, Object> {

	private final RecordFilterStrategy<Object, Object> delegate;

	BindingRecordFilterStrategy(RecordFilterStrategy<Object, Object> delegate) {
		this.delegate = delegate;
	}

	@Override
	public boolean filter(ConsumerRecord<Object, Object> consumerRecord) {
		return this.delegate.filter(consumerRecord);
	}

	@Override
	public List<ConsumerRecord<Object, Object>> filterBatch(List<ConsumerRecord<Object, Object>> records) {
		List<ConsumerRecord<Object, Object>> passed = this.delegate.filterBatch(records);
		CurrentRecord.setFilteredBatch(passed);
		return passed;
	}

	@Override
	public boolean ignoreEmptyBatch() {
		return this.delegate.ignoreEmptyBatch();
	}

}
