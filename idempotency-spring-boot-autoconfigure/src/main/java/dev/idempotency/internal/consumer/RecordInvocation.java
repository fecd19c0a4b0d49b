package dev.idempotency.internal.consumer;

import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.store.ProcessedMessage;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * One record on its way through a listener's plan, once its key is known.
 *
 * @param method the listener method
 * @param metrics the meters of this invocation (observed, when observations are on)
 * @param record the record
 * @param message the record's claim: scope, key and coordinates
 * @param arguments the invocation's arguments
 */
record RecordInvocation(ListenerMethod method, ListenerMetrics metrics, ConsumerRecord<?, ?> record,
		ProcessedMessage message, @Nullable Object[] arguments) {
}
