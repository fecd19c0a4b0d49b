package dev.idempotency.consumer;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.Collection;
import java.util.List;

import dev.idempotency.Idempotent;
import dev.idempotency.key.KeyExpressions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.Nullable;

import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.adapter.ConsumerRecordMetadata;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Headers;
import org.springframework.messaging.handler.annotation.Payload;

/**
 * What the interceptor needs to know of one {@code @Idempotent} listener method, worked
 * out once: its tag name, its scope and where its payload and acknowledgment are among
 * the arguments.
 *
 * @param method the listener method
 * @param idempotent its annotation
 * @param name the {@code listener} tag value: {@code SimpleClassName.method}
 * @param payloadIndex the index of the payload argument, or -1 when there is none
 * @param payloadInMessage whether the payload argument is a {@link Message}
 * @param acknowledgmentIndex the index of the {@link Acknowledgment} argument, or -1
 */
record ListenerMethod(Method method, Idempotent idempotent, String name, int payloadIndex, boolean payloadInMessage,
		int acknowledgmentIndex) {

	private static final List<Class<?>> INFRASTRUCTURE_TYPES = List.of(ConsumerRecord.class, Acknowledgment.class,
			Consumer.class, ConsumerRecordMetadata.class, org.apache.kafka.common.header.Headers.class);

	/**
	 * Describe an annotated method, checking that it can be intercepted.
	 * @param method the method, as declared on the user's class
	 * @param targetClass the user's class
	 * @return the description
	 * @throws IllegalStateException naming the method, if it cannot be intercepted
	 */
	static ListenerMethod describe(Method method, Class<?> targetClass) {
		Idempotent idempotent = AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class);
		String name = targetClass.getSimpleName() + "." + method.getName();
		String display = targetClass.getName() + "." + method.getName();
		if (idempotent == null) {
			throw new IllegalStateException(display + " is not annotated with @Idempotent");
		}
		if (!isKafkaListener(method, targetClass)) {
			throw new IllegalStateException("@Idempotent method " + display
					+ " is not a @KafkaListener (or @KafkaHandler) method; only Kafka listener methods can be "
					+ "made idempotent");
		}
		if (isBatch(method)) {
			throw new IllegalStateException("@Idempotent method " + display
					+ " is a batch listener; @Idempotent supports record listeners only");
		}
		if (method.getReturnType().isPrimitive() && method.getReturnType() != void.class) {
			throw new IllegalStateException("@Idempotent method " + display + " returns "
					+ method.getReturnType() + "; a skipped duplicate has no value to return, use void or an object");
		}
		if (!idempotent.key().isEmpty()) {
			try {
				KeyExpressions.parse(idempotent.key());
			}
			catch (IllegalArgumentException ex) {
				throw new IllegalStateException("@Idempotent method " + display + ": " + ex.getMessage(), ex);
			}
		}
		int payloadIndex = -1;
		int acknowledgmentIndex = -1;
		Class<?>[] types = method.getParameterTypes();
		Annotation[][] annotations = method.getParameterAnnotations();
		for (int i = 0; i < types.length; i++) {
			if (Acknowledgment.class.isAssignableFrom(types[i])) {
				acknowledgmentIndex = i;
			}
			if (has(annotations[i], Payload.class)) {
				payloadIndex = i;
			}
			else if (payloadIndex < 0 && !has(annotations[i], Header.class) && !has(annotations[i], Headers.class)
					&& !isInfrastructure(types[i])) {
				payloadIndex = i;
			}
		}
		boolean payloadInMessage = payloadIndex >= 0 && Message.class.isAssignableFrom(types[payloadIndex]);
		return new ListenerMethod(method, idempotent, name, payloadIndex, payloadInMessage, acknowledgmentIndex);
	}

	/**
	 * Return the payload the listener receives, or the record value when it takes none.
	 * @param arguments the invocation arguments
	 * @param record the record
	 * @return the payload
	 */
	@Nullable Object payload(@Nullable Object[] arguments, ConsumerRecord<?, ?> record) {
		if (this.payloadIndex < 0 || this.payloadIndex >= arguments.length) {
			return record.value();
		}
		Object argument = arguments[this.payloadIndex];
		return (this.payloadInMessage && argument instanceof Message<?> message) ? message.getPayload() : argument;
	}

	/**
	 * Return the acknowledgment among the arguments, if the method takes one.
	 * @param arguments the invocation arguments
	 * @return the acknowledgment, or {@code null}
	 */
	@Nullable Acknowledgment acknowledgment(@Nullable Object[] arguments) {
		if (this.acknowledgmentIndex < 0 || this.acknowledgmentIndex >= arguments.length) {
			return null;
		}
		return (arguments[this.acknowledgmentIndex] instanceof Acknowledgment ack) ? ack : null;
	}

	private static boolean isKafkaListener(Method method, Class<?> targetClass) {
		return AnnotatedElementUtils.hasAnnotation(method, KafkaListener.class)
				|| (AnnotatedElementUtils.hasAnnotation(method, KafkaHandler.class)
						&& AnnotatedElementUtils.hasAnnotation(targetClass, KafkaListener.class));
	}

	private static boolean isBatch(Method method) {
		KafkaListener listener = AnnotatedElementUtils.findMergedAnnotation(method, KafkaListener.class);
		if (listener != null && "true".equalsIgnoreCase(listener.batch())) {
			return true;
		}
		for (Class<?> type : method.getParameterTypes()) {
			if (ConsumerRecords.class.isAssignableFrom(type) || Collection.class.isAssignableFrom(type)) {
				return true;
			}
		}
		return false;
	}

	private static boolean isInfrastructure(Class<?> parameterType) {
		return INFRASTRUCTURE_TYPES.stream().anyMatch((type) -> type.isAssignableFrom(parameterType));
	}

	private static boolean has(Annotation[] annotations, Class<? extends Annotation> type) {
		for (Annotation annotation : annotations) {
			if (type.isInstance(annotation)
					|| AnnotatedElementUtils.hasAnnotation(annotation.annotationType(), type)) {
				return true;
			}
		}
		return false;
	}

}
