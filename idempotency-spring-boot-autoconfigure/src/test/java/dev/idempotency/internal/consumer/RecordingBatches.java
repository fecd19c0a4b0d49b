package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import org.springframework.core.NestedExceptionUtils;

/**
 * What a listener of a test received, and what the error handler's recoverer got,
 * with the most specific cause of each.
 */
class RecordingBatches {

	private final List<String> received = new CopyOnWriteArrayList<>();

	private final List<ConsumerRecord<?, ?>> recovered = new CopyOnWriteArrayList<>();

	private final List<Throwable> exceptions = new CopyOnWriteArrayList<>();

	void receive(List<ConsumerRecord<String, String>> records) {
		records.forEach((record) -> this.received.add(record.value()));
	}

	public void recover(ConsumerRecord<?, ?> record, Exception ex) {
		this.recovered.add(record);
		this.exceptions.add(NestedExceptionUtils.getMostSpecificCause(ex));
	}

	List<String> received() {
		return this.received;
	}

	List<ConsumerRecord<?, ?>> recovered() {
		return this.recovered;
	}

	List<Throwable> exceptions() {
		return this.exceptions;
	}

}
