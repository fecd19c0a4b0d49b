package dev.idempotency;

import java.lang.reflect.Method;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * A record delivered to an {@link Idempotent @Idempotent} listener method.
 *
 * @param record the Kafka record as the listener container received it
 * @param payload the payload the listener method receives after conversion, or the
 * record value when the method takes no payload parameter
 * @param method the listener method
 * @param idempotent the annotation on the listener method
 */
public record InboundMessage(ConsumerRecord<?, ?> record, @Nullable Object payload, Method method,
		Idempotent idempotent) {
}
