package dev.idempotency.internal.consumer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.internals.AutoOffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.mockito.Mockito;

import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.kafka.KafkaException;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * How a batch failed by the infrastructure is sent back to the container.
 */
class InfrastructureRetryingErrorHandlerUnitTests {

	private final TopicPartition kept = new TopicPartition("t", 0);

	private final TopicPartition lost = new TopicPartition("t", 1);

	@Test
	void aPartitionLostInARebalanceSinceThePollDoesNotKeepTheOthersFromBeingSoughtBack() {
		MockConsumer<String, String> consumer = new MockConsumer<>(AutoOffsetResetStrategy.EARLIEST.name());
		consumer.assign(List.of(this.kept));
		consumer.updateBeginningOffsets(Map.of(this.kept, 0L));
		consumer.seek(this.kept, 12);
		// the batch was polled before the consumer lost partition 1; it comes first
		Map<TopicPartition, List<ConsumerRecord<String, String>>> records = new LinkedHashMap<>();
		records.put(this.lost, List.of(new ConsumerRecord<>("t", 1, 7, null, "a")));
		records.put(this.kept, List.of(new ConsumerRecord<>("t", 0, 10, null, "b"),
				new ConsumerRecord<>("t", 0, 11, null, "c")));
		MessageListenerContainer container = Mockito.mock(MessageListenerContainer.class);
		Mockito.when(container.isRunning()).thenReturn(true);
		InfrastructureRetryingErrorHandler handler = new InfrastructureRetryingErrorHandler(new DefaultErrorHandler(),
				new FixedBackOff(0, FixedBackOff.UNLIMITED_ATTEMPTS));
		assertThatExceptionOfType(KafkaException.class)
			.isThrownBy(() -> handler.handleBatch(new DataAccessResourceFailureException("database down"),
					new ConsumerRecords<>(records, Map.of()), consumer, container, () -> {
					}))
			.withMessageContaining("it will be delivered again");
		assertThat(consumer.assignment()).isEqualTo(Set.of(this.kept));
		assertThat(consumer.position(this.kept)).isEqualTo(10);
	}

}
