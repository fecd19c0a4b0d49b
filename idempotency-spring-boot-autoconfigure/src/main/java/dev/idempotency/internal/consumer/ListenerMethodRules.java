package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;

import org.jspecify.annotations.Nullable;

import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.scheduling.annotation.Async;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.annotation.AnnotationTransactionAttributeSource;
import org.springframework.transaction.interceptor.TransactionAttribute;
import org.springframework.transaction.interceptor.TransactionAttributeSource;

/**
 * What makes a method one that {@code @Idempotent} can intercept: a Kafka listener whose
 * work is done, on the consumer thread, in the claim's transaction, when it returns.
 * Checked at start-up for the declaration, and for each returned value.
 */
final class ListenerMethodRules {

	// reads Spring's @Transactional, and JTA's and EJB's where they are on the class path
	private static final TransactionAttributeSource TRANSACTION_ATTRIBUTES = new AnnotationTransactionAttributeSource(
			false);

	private ListenerMethodRules() {
	}

	/**
	 * Check a method's declaration.
	 * @param method the method, as declared on the user's class
	 * @param targetClass the user's class
	 * @param display the method's name in messages
	 * @throws IllegalStateException naming the method, if it cannot be intercepted
	 */
	static void check(Method method, Class<?> targetClass, String display) {
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
	}

	static boolean isKafkaListener(Method method, Class<?> targetClass) {
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

	static boolean isAsynchronous(Method method) {
		Class<?> returnType = method.getReturnType();
		if (Future.class.isAssignableFrom(returnType) || CompletionStage.class.isAssignableFrom(returnType)
				|| implementsByName(returnType, "org.reactivestreams.Publisher")) {
			return true;
		}
		Class<?>[] parameters = method.getParameterTypes();
		return parameters.length > 0
				&& parameters[parameters.length - 1].getName().equals("kotlin.coroutines.Continuation");
	}

	static boolean implementsByName(Class<?> type, String name) {
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

}
