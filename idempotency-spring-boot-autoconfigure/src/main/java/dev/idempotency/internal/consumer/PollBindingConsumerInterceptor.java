package dev.idempotency.internal.consumer;

import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * A Kafka {@link ConsumerInterceptor} that binds each poll's records to the consumer
 * thread, so that the cache can be asked about all keys of a poll in one round trip
 * before a record listener sees the first of them. It changes nothing.
 */
public final class PollBindingConsumerInterceptor implements ConsumerInterceptor<Object, Object> {

	@Override
	public ConsumerRecords<Object, Object> onConsume(ConsumerRecords<Object, Object> records) {
		if (!records.isEmpty()) {
			PollPrefetch.bind(records);
		}
		return records;
	}

	@Override
	public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
	}

	@Override
	public void close() {
	}

	@Override
	public void configure(Map<String, ?> configs) {
	}

}
