package dev.idempotency.internal.consumer;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;

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
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.adapter.ConsumerRecordMetadata;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.support.KafkaUtils;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Headers;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.scheduling.annotation.Async;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.annotation.AnnotationTransactionAttributeSource;
import org.springframework.transaction.interceptor.TransactionAttribute;
import org.springframework.transaction.interceptor.TransactionAttributeSource;

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
 * @param acknowledgmentIndex the index of the {@link Acknowledgment} argument, or -1
 * @param acknowledgmentHeaders the indexes of the arguments through which the listener can
 * reach the container's acknowledgment as the {@link KafkaHeaders#ACKNOWLEDGMENT} header:
 * a {@link Message}, its {@link MessageHeaders}, a {@code @Headers} map, or that
 * {@code @Header} itself taken as another type than {@link Acknowledgment}
 * @param batchIndex the index of the batch argument, or -1 for a record listener
 * @param batchKind the shape of the batch argument, or {@code null}
 * @param annotatedScope the annotation's scope, fitted to the store, or empty for the
 * consumer group's
 */
record ListenerMethod(Method method, Idempotent idempotent, String name, int payloadIndex, boolean payloadInMessage,
		int acknowledgmentIndex, List<Integer> acknowledgmentHeaders, int batchIndex, @Nullable BatchKind batchKind,
		String annotatedScope) {

	// reads Spring's @Transactional, and JTA's and EJB's where they are on the class path
	private static final TransactionAttributeSource TRANSACTION_ATTRIBUTES = new AnnotationTransactionAttributeSource(
			false);

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
		if (!isKafkaListener(method, targetClass)) {
			throw new IllegalStateException("@Idempotent method " + display
					+ " is not a @KafkaListener (or @KafkaHandler) method; only Kafka listener methods can be "
					+ "made idempotent");
		}
		if (method.getReturnType().isPrimitive() && method.getReturnType() != void.class) {
			throw new IllegalStateException("@Idempotent method " + display + " returns " + method.getReturnType()
					+ "; a skipped duplicate has no value to return, use void or an object");
		}
		if (AnnotatedElementUtils.hasAnnotation(method, Async.class)
				|| AnnotatedElementUtils.hasAnnotation(targetClass, Async.class)) {
			throw new IllegalStateException("@Idempotent method " + display + " is @Async: it would return at once "
					+ "on the consumer thread, so the container would commit the offset before the claim and the "
					+ "work ran, and a failure on the executor would never be retried. Remove @Async; to process "
					+ "records in parallel, raise the container's concurrency (partitions)");
		}
		// Spring's @Transactional, jakarta.transaction.Transactional or EJB's, on the method or its class
		TransactionAttribute own = TRANSACTION_ATTRIBUTES.getTransactionAttribute(method, targetClass);
		String apart = (own != null) ? switch (own.getPropagationBehavior()) {
			case TransactionDefinition.PROPAGATION_REQUIRES_NEW -> "REQUIRES_NEW";
			case TransactionDefinition.PROPAGATION_NOT_SUPPORTED -> "NOT_SUPPORTED";
			case TransactionDefinition.PROPAGATION_NEVER -> "NEVER";
			default -> null;
		} : null;
		if (apart != null) {
			throw new IllegalStateException("@Idempotent method " + display + " is @Transactional with propagation "
					+ apart + ": its work would not run in the claim's transaction, so it would commit apart from "
					+ "the claim and be applied again on a retry. Remove the propagation (REQUIRED, the default, "
					+ "joins the claim's transaction)");
		}
		if (isAsynchronous(method)) {
			throw new IllegalStateException("@Idempotent method " + display + " is asynchronous (it returns "
					+ method.getReturnType().getSimpleName() + " or suspends): its work would run after the claim "
					+ "committed, outside the transaction, and a failure would never be retried. Make it return "
					+ "when its work is done (void or a value)");
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
			else if (carriesAcknowledgmentHeader(types[i], annotations[i])) {
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
				payloadIndex, payloadInMessage, acknowledgmentIndex, List.copyOf(acknowledgmentHeaders), batchIndex,
				batchKind, idempotent.scope().isEmpty() ? "" : StoredKey.of(idempotent.scope()));
	}

	private static boolean carriesAcknowledgmentHeader(Class<?> type, Annotation[] annotations) {
		if (Message.class.isAssignableFrom(type) || MessageHeaders.class.isAssignableFrom(type)) {
			return true;
		}
		if (has(annotations, Headers.class)) {
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
	 * Return the acknowledgment among the arguments, if the method takes one.
	 * @param arguments the invocation arguments
	 * @return the acknowledgment, or {@code null}
	 */
	@Nullable Acknowledgment acknowledgment(@Nullable Object[] arguments) {
		if (this.acknowledgmentIndex >= 0 && this.acknowledgmentIndex < arguments.length
				&& arguments[this.acknowledgmentIndex] instanceof Acknowledgment ack) {
			return ack;
		}
		for (int index : this.acknowledgmentHeaders) {
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
		Acknowledgment acknowledgment = acknowledgment(arguments);
		if (acknowledgment != null) {
			acknowledgment.acknowledge();
		}
	}

	/**
	 * Return whether the listener can reach the container's acknowledgment through one of
	 * its arguments.
	 * @return {@code true} if it takes an {@link Acknowledgment} or a carrier of the header
	 */
	boolean takesAcknowledgment() {
		return this.acknowledgmentIndex >= 0 || !this.acknowledgmentHeaders.isEmpty();
	}

	/**
	 * Put an acknowledgment in place of the container's, wherever the listener could reach
	 * the container's: the {@link Acknowledgment} argument and the
	 * {@link KafkaHeaders#ACKNOWLEDGMENT} header of every argument that carries it.
	 * @param arguments the arguments, changed in place
	 * @param acknowledgment the acknowledgment to give the listener
	 */
	void replaceAcknowledgment(@Nullable Object[] arguments, Acknowledgment acknowledgment) {
		if (this.acknowledgmentIndex >= 0 && this.acknowledgmentIndex < arguments.length
				&& arguments[this.acknowledgmentIndex] instanceof Acknowledgment) {
			arguments[this.acknowledgmentIndex] = acknowledgment;
		}
		for (int index : this.acknowledgmentHeaders) {
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

	private static boolean isKafkaListener(Method method, Class<?> targetClass) {
		return AnnotatedElementUtils.hasAnnotation(method, KafkaListener.class)
				|| (AnnotatedElementUtils.hasAnnotation(method, KafkaHandler.class)
						&& AnnotatedElementUtils.hasAnnotation(targetClass, KafkaListener.class));
	}

	/**
	 * Return what the listener returned, unless it is work still under way (a future, a
	 * completion stage or a reactive publisher, whatever the declared return type): the
	 * container would wait for it after the claim committed, outside the transaction.
	 * @param returned what the listener method returned
	 * @param method the listener method
	 * @return the returned value
	 * @throws IllegalStateException if the value is asynchronous, so that the transaction
	 * rolls back and the record goes to the error handler
	 */
	static @Nullable Object requireCompleted(@Nullable Object returned, Method method) {
		if (returned != null && (returned instanceof Future<?> || returned instanceof CompletionStage<?>
				|| implementsByName(returned.getClass(), "org.reactivestreams.Publisher"))) {
			if (returned instanceof Future<?> future) {
				future.cancel(false);
			}
			throw new IllegalStateException("@Idempotent method " + method.getDeclaringClass().getName() + "."
					+ method.getName() + " returned " + returned.getClass().getName() + ", work still under way: it "
					+ "would finish after the claim committed, outside the transaction, and a failure would never "
					+ "be retried. Make it return when its work is done (void or a value)");
		}
		return returned;
	}

	private static boolean isAsynchronous(Method method) {
		Class<?> returnType = method.getReturnType();
		if (Future.class.isAssignableFrom(returnType) || CompletionStage.class.isAssignableFrom(returnType)
				|| implementsByName(returnType, "org.reactivestreams.Publisher")) {
			return true;
		}
		Class<?>[] parameters = method.getParameterTypes();
		return parameters.length > 0
				&& parameters[parameters.length - 1].getName().equals("kotlin.coroutines.Continuation");
	}

	private static boolean implementsByName(Class<?> type, String name) {
		if (type == null) {
			return false;
		}
		if (type.getName().equals(name)) {
			return true;
		}
		for (Class<?> implemented : type.getInterfaces()) {
			if (implementsByName(implemented, name)) {
				return true;
			}
		}
		return implementsByName(type.getSuperclass(), name);
	}

	private static boolean hasOwnFilter(Method method) {
		KafkaListener listener = AnnotatedElementUtils.findMergedAnnotation(method, KafkaListener.class);
		return listener != null && !listener.filter().isEmpty();
	}

	private static boolean isInfrastructure(Class<?> parameterType) {
		return INFRASTRUCTURE_TYPES.stream().anyMatch((type) -> type.isAssignableFrom(parameterType));
	}

	private static boolean has(Annotation[] annotations, Class<? extends Annotation> type) {
		for (Annotation annotation : annotations) {
			if (type.isInstance(annotation) || AnnotatedElementUtils.hasAnnotation(annotation.annotationType(), type)) {
				return true;
			}
		}
		return false;
	}

}
