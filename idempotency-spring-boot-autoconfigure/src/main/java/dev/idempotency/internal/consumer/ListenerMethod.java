package dev.idempotency.internal.consumer;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.key.KeyExpressions;
import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.internal.key.StoredKey;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.Nullable;

import org.springframework.core.MethodParameter;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.adapter.ConsumerRecordMetadata;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaUtils;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Headers;
import org.springframework.messaging.handler.annotation.Payload;

/**
 * What the interceptor needs to know of one {@code @Idempotent} listener method, worked
 * out once: its tag name, and where its payload, batch and acknowledgment are among the
 * arguments.
 *
 * @param method the listener method
 * @param idempotent its annotation
 * @param name the {@code listener} tag value: {@code SimpleClassName.method}
 * @param payloadIndex the index of the payload argument, or -1 when there is none
 * @param payloadInMessage whether the payload argument is a {@link Message}
 * @param acknowledgments the arguments through which the listener can reach the
 * container's acknowledgment
 * @param batchIndex the index of the batch argument, or -1 for a record listener
 * @param batchKind the shape of the batch argument, or {@code null}
 * @param annotatedScope the annotation's scope, fitted to the store, or empty for the
 * consumer group's
 */
record ListenerMethod(Method method, Idempotent idempotent, String name, int payloadIndex, boolean payloadInMessage,
		AcknowledgmentArguments acknowledgments, int batchIndex, @Nullable BatchKind batchKind,
		String annotatedScope) {

	private static final List<Class<?>> INFRASTRUCTURE_TYPES = List.of(ConsumerRecord.class, ConsumerRecords.class,
			Acknowledgment.class, Consumer.class, ConsumerRecordMetadata.class,
			org.apache.kafka.common.header.Headers.class);

	/**
	 * The shapes of batch the listener method can take.
	 */
	enum BatchKind {

		/** {@code List<ConsumerRecord<K, V>>}. */
		RECORD_LIST,

		/** {@code ConsumerRecords<K, V>}. */
		CONSUMER_RECORDS,

		/**
		 * {@code List<V>}: a batch when the container delivers one, else a record payload
		 * that is a list.
		 */
		PAYLOAD_LIST

	}

	/**
	 * Describe an annotated method, checking that it can be intercepted.
	 * @param method the method, as declared on the user's class
	 * @param targetClass the user's class
	 * @return the description
	 * @throws IllegalStateException naming the method, if it cannot be intercepted
	 */
	static ListenerMethod describe(Method method, Class<?> targetClass) {
		Idempotent idempotent = AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class);
		String display = targetClass.getName() + "." + method.getName();
		if (idempotent == null) {
			throw new IllegalStateException(display + " is not annotated with @Idempotent");
		}
		ListenerMethodRules.check(method, targetClass, display);
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
		List<Integer> acknowledgmentHeaders = new ArrayList<>();
		int batchIndex = -1;
		BatchKind batchKind = null;
		Class<?>[] types = method.getParameterTypes();
		Annotation[][] annotations = method.getParameterAnnotations();
		for (int i = 0; i < types.length; i++) {
			boolean header = has(annotations[i], Header.class) || has(annotations[i], Headers.class);
			if (Acknowledgment.class.isAssignableFrom(types[i])) {
				acknowledgmentIndex = i;
			}
			else if (AcknowledgmentArguments.carriesHeader(types[i], annotations[i])) {
				acknowledgmentHeaders.add(i);
				if (Message.class.isAssignableFrom(types[i]) && payloadIndex < 0) {
					payloadIndex = i;
				}
			}
			else if (header && Collection.class.isAssignableFrom(types[i]) && !has(annotations[i], Headers.class)) {
				throw new IllegalStateException("@Idempotent method " + display + " takes a list of headers ("
						+ "parameter " + i + "); duplicates are removed from a batch, which would leave such a list "
						+ "out of step: take List<ConsumerRecord> or ConsumerRecords instead");
			}
			else if (ConsumerRecords.class.isAssignableFrom(types[i])) {
				batchIndex = i;
				batchKind = BatchKind.CONSUMER_RECORDS;
			}
			else if (!header && List.class.isAssignableFrom(types[i])) {
				Class<?> element = ResolvableType.forMethodParameter(new MethodParameter(method, i))
					.asCollection()
					.resolveGeneric(0);
				if (element != null && ConsumerRecord.class.isAssignableFrom(element)) {
					batchIndex = i;
					batchKind = BatchKind.RECORD_LIST;
				}
				else if (element != null && Message.class.isAssignableFrom(element)) {
					throw new IllegalStateException("@Idempotent method " + display + " takes List<Message<?>>, "
							+ "which is not supported; take List<ConsumerRecord>, ConsumerRecords or List of payloads");
				}
				else if (batchKind == null && (payloadIndex < 0 || has(annotations[i], Payload.class))) {
					batchIndex = i;
					batchKind = BatchKind.PAYLOAD_LIST;
					payloadIndex = i;
				}
			}
			else if (has(annotations[i], Payload.class)) {
				payloadIndex = i;
			}
			else if (payloadIndex < 0 && !header && !isInfrastructure(types[i])) {
				payloadIndex = i;
			}
		}
		if (batchKind != null) {
			for (int i = 0; i < types.length; i++) {
				if (has(annotations[i], Headers.class)) {
					throw new IllegalStateException("@Idempotent method " + display + " takes @Headers (parameter "
							+ i + ") with a batch; duplicates are removed from a batch, which would leave the "
							+ "per-record header lists out of step: take List<ConsumerRecord> or ConsumerRecords "
							+ "instead");
				}
			}
		}
		if (batchKind == BatchKind.PAYLOAD_LIST && hasOwnFilter(method)) {
			throw new IllegalStateException("@Idempotent method " + display + " takes a List of payloads and its "
					+ "@KafkaListener names a filter of its own; the records its payloads came from cannot be told "
					+ "apart: take List<ConsumerRecord> or ConsumerRecords, or set the filter on the container "
					+ "factory");
		}
		LeaseOptions.check(idempotent, method, display,
				batchKind == BatchKind.RECORD_LIST || batchKind == BatchKind.CONSUMER_RECORDS);
		if (batchKind != null && batchKind != BatchKind.PAYLOAD_LIST && payloadIndex == batchIndex) {
			payloadIndex = -1;
		}
		boolean payloadInMessage = payloadIndex >= 0 && Message.class.isAssignableFrom(types[payloadIndex]);
		return new ListenerMethod(method, idempotent, targetClass.getSimpleName() + "." + method.getName(),
				payloadIndex, payloadInMessage,
				new AcknowledgmentArguments(acknowledgmentIndex, List.copyOf(acknowledgmentHeaders)), batchIndex,
				batchKind, idempotent.scope().isEmpty() ? "" : StoredKey.of(idempotent.scope()));
	}

	/**
	 * Return the scope of a record's key: the annotated scope; else the consumer group of
	 * the current consumer thread, except for a record that a
	 * {@code DeadLetterPublishingRecoverer} republished to a retry or dead-letter topic and
	 * that the failing group's own retry or dead-letter endpoint consumes: that record is
	 * the same message, in the original group's scope; else the listener's name. An
	 * endpoint is the failing group's own when its group is the original group with the
	 * suffix its topic adds to the original topic ({@code ledger-retry-0} reading
	 * {@code payments-retry-0}, {@code ledger-dlt} reading {@code payments-dlt}), as
	 * spring-kafka names retry endpoints; another service whose group merely starts with
	 * the original group's name ({@code ledger-alerts}) keeps its own scope.
	 * @param record the record
	 * @return the scope, fitted to the store
	 */
	String scope(ConsumerRecord<?, ?> record) {
		if (!this.annotatedScope.isEmpty()) {
			return this.annotatedScope;
		}
		String scope = KafkaUtils.getConsumerGroupId();
		String original = RecordCoordinates.originalConsumerGroup(record);
		if (scope != null && original != null
				&& sameSuffix(scope, original, record.topic(), RecordCoordinates.originalTopic(record))) {
			scope = original;
		}
		if (scope == null || scope.isEmpty()) {
			scope = this.name;
		}
		return StoredKey.of(scope);
	}

	private static boolean sameSuffix(String group, String originalGroup, String topic,
			@Nullable String originalTopic) {
		return originalTopic != null && group.length() > originalGroup.length() && group.startsWith(originalGroup)
				&& topic.startsWith(originalTopic)
				&& group.substring(originalGroup.length()).equals(topic.substring(originalTopic.length()));
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
	 * Acknowledge a record or batch the listener was not invoked for: with manual
	 * acknowledgment the listener would have acknowledged it, and the offset would
	 * otherwise never be committed.
	 * @param arguments the invocation arguments
	 */
	void acknowledgeSkipped(@Nullable Object[] arguments) {
		this.acknowledgments.acknowledgeSkipped(arguments);
	}

	/**
	 * Return whether this invocation delivers a batch.
	 * @return {@code true} for a batch
	 */
	boolean isBatchInvocation() {
		if (this.batchKind == null) {
			return false;
		}
		// a List of payloads is a batch only when the container delivered one
		return this.batchKind != BatchKind.PAYLOAD_LIST || CurrentRecord.batch() != null;
	}

	private static boolean hasOwnFilter(Method method) {
		KafkaListener listener = AnnotatedElementUtils.findMergedAnnotation(method, KafkaListener.class);
		return listener != null && !listener.filter().isEmpty();
	}

	private static boolean isInfrastructure(Class<?> parameterType) {
		return INFRASTRUCTURE_TYPES.stream().anyMatch((type) -> type.isAssignableFrom(parameterType));
	}

	static boolean has(Annotation[] annotations, Class<? extends Annotation> type) {
		for (Annotation annotation : annotations) {
			if (type.isInstance(annotation) || AnnotatedElementUtils.hasAnnotation(annotation.annotationType(), type)) {
				return true;
			}
		}
		return false;
	}

}
