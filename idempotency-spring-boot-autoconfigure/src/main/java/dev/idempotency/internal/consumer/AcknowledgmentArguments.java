package dev.idempotency.internal.consumer;

import java.lang.annotation.Annotation;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Headers;
import org.springframework.messaging.support.MessageBuilder;

/**
 * Where a listener method can reach the container's {@link Acknowledgment} among its
 * arguments, so that the starter can acknowledge for it or give it another.
 *
 * @param index the index of the {@link Acknowledgment} argument, or -1
 * @param headers the indexes of the arguments through which the listener can reach the
 * container's acknowledgment as the {@link KafkaHeaders#ACKNOWLEDGMENT} header: a
 * {@link Message}, its {@link MessageHeaders}, a {@code @Headers} map, or that
 * {@code @Header} itself taken as another type than {@link Acknowledgment}
 */
record AcknowledgmentArguments(int index, List<Integer> headers) {

	static boolean carriesHeader(Class<?> type, Annotation[] annotations) {
		if (Message.class.isAssignableFrom(type) || MessageHeaders.class.isAssignableFrom(type)) {
			return true;
		}
		if (ListenerMethod.has(annotations, Headers.class)) {
			return Map.class.isAssignableFrom(type);
		}
		for (Annotation annotation : annotations) {
			if (annotation instanceof Header header && (KafkaHeaders.ACKNOWLEDGMENT.equals(header.value())
					|| KafkaHeaders.ACKNOWLEDGMENT.equals(header.name()))) {
				return true;
			}
		}
		return false;
	}

	/**
	 * Return the acknowledgment among the arguments, if the method takes one.
	 * @param arguments the invocation arguments
	 * @return the acknowledgment, or {@code null}
	 */
	@Nullable Acknowledgment find(@Nullable Object[] arguments) {
		if (this.index >= 0 && this.index < arguments.length
				&& arguments[this.index] instanceof Acknowledgment ack) {
			return ack;
		}
		for (int index : this.headers) {
			if (index < arguments.length && headerAcknowledgment(arguments[index]) instanceof Acknowledgment ack) {
				return ack;
			}
		}
		return null;
	}

	/**
	 * Acknowledge a record or batch the listener was not invoked for: with manual
	 * acknowledgment the listener would have acknowledged it, and the offset would
	 * otherwise never be committed.
	 * @param arguments the invocation arguments
	 */
	void acknowledgeSkipped(@Nullable Object[] arguments) {
		Acknowledgment acknowledgment = find(arguments);
		if (acknowledgment != null) {
			acknowledgment.acknowledge();
		}
	}

	/**
	 * Return whether the listener can reach the container's acknowledgment through one of
	 * its arguments.
	 * @return {@code true} if it takes an {@link Acknowledgment} or a carrier of the header
	 */
	boolean any() {
		return this.index >= 0 || !this.headers.isEmpty();
	}

	/**
	 * Put an acknowledgment in place of the container's, wherever the listener could reach
	 * the container's: the {@link Acknowledgment} argument and the
	 * {@link KafkaHeaders#ACKNOWLEDGMENT} header of every argument that carries it.
	 * @param arguments the arguments, changed in place
	 * @param acknowledgment the acknowledgment to give the listener
	 */
	void replace(@Nullable Object[] arguments, Acknowledgment acknowledgment) {
		if (this.index >= 0 && this.index < arguments.length
				&& arguments[this.index] instanceof Acknowledgment) {
			arguments[this.index] = acknowledgment;
		}
		for (int index : this.headers) {
			if (index < arguments.length && headerAcknowledgment(arguments[index]) != null) {
				arguments[index] = withAcknowledgment(arguments[index], acknowledgment);
			}
		}
	}

	private static @Nullable Object headerAcknowledgment(@Nullable Object argument) {
		if (argument instanceof Message<?> message) {
			return message.getHeaders().get(KafkaHeaders.ACKNOWLEDGMENT);
		}
		if (argument instanceof Map<?, ?> headers) {
			return headers.get(KafkaHeaders.ACKNOWLEDGMENT);
		}
		return (argument instanceof Acknowledgment) ? argument : null;
	}

	private static Object withAcknowledgment(Object argument, Acknowledgment acknowledgment) {
		if (argument instanceof Message<?> message) {
			return MessageBuilder.fromMessage(message).setHeader(KafkaHeaders.ACKNOWLEDGMENT, acknowledgment).build();
		}
		if (argument instanceof Map<?, ?> headers) {
			Map<String, @Nullable Object> replaced = new LinkedHashMap<>();
			headers.forEach((name, value) -> replaced.put(String.valueOf(name), value));
			replaced.put(KafkaHeaders.ACKNOWLEDGMENT, acknowledgment);
			return (argument instanceof MessageHeaders) ? new MessageHeaders(replaced) : replaced;
		}
		return acknowledgment;
	}

}
