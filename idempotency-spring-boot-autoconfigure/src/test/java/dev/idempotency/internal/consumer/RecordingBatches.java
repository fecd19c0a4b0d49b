package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

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

	/**
	 * An error handler that retries a failed delivery once at once, then hands each record
	 * it gives up to the application's {@link RecordingBatches}.
	 */
	@Configuration(proxyBeanMethods = false)
	static class RecoveringErrorHandler {

		@Bean
		DefaultErrorHandler errorHandler(RecordingBatches recorded) {
			return new DefaultErrorHandler(recorded::recover, new FixedBackOff(0, 1));
		}

	}

}
