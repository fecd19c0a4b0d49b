package dev.idempotency;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a {@code @KafkaListener} (or {@code @KafkaHandler}) method whose effects must be
 * applied exactly once per idempotency key.
 * <p>
 * Before the method runs, the key of the record is claimed in the processed-message store
 * in a new transaction of the application's {@code PlatformTransactionManager}; the method
 * then runs in that same transaction, so its database work and the claim commit or roll
 * back together. A record whose key was already claimed in the same scope is skipped: the
 * method is not invoked and the listener returns normally, so the container commits its
 * offset.
 * <p>
 * The key is resolved from {@link #key()} when given, else from the configured header
 * ({@code X-Idempotency-Key} by default), else by the configured missing-key policy.
 *
 * @see IdempotencyKeyResolver
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

	/**
	 * SpEL expression that yields the idempotency key. The root object offers
	 * {@code record} (the {@code ConsumerRecord}), {@code payload} (the converted listener
	 * payload), {@code headers} (header name to UTF-8 value), {@code key}, {@code topic},
	 * {@code partition} and {@code offset}. Example: {@code "payload.orderId"} or
	 * {@code "headers['X-Request-Id']"}. Empty (the default) uses the key header.
	 * @return the key expression, or an empty string
	 */
	String key() default "";

	/**
	 * Scope in which keys are unique. Empty (the default) uses the consumer group of the
	 * listener, so that two consumer groups reading one topic each process every message
	 * once.
	 * @return the scope, or an empty string
	 */
	String scope() default "";

}
