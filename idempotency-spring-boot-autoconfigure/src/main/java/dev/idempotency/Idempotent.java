package dev.idempotency;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a {@code @KafkaListener} (or {@code @KafkaHandler}) method, or a Spring MVC handler
 * method, whose effects must be applied exactly once per idempotency key.
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
 * <p>
 * That is the {@link Mode#TRANSACTIONAL} mode, for effects that are database writes. For
 * effects outside the database (an HTTP call, a payment, an e-mail), {@link Mode#LEASE}
 * commits the claim alone, as in progress with a lease and a fencing token, runs the
 * method outside any transaction of the starter, and records completion only if the
 * claim was not taken over in the meantime.
 * <p>
 * On a Spring MVC handler method ({@code @PostMapping} and the other request mappings), the
 * annotation makes the request idempotent by its {@code Idempotency-Key} header
 * ({@code idempotency.web.key-header}): the claim, the handler's work and its response
 * commit together (or, in lease mode, the response completes the claim), and a retried
 * request gets the stored response. There, {@link #key()} is evaluated against the
 * request (its root object offers {@code request}, {@code headers}, {@code method} and
 * {@code path}), {@link #scope()} replaces the endpoint ({@code http POST /payments}) in
 * the scope (the authenticated principal is always added), every request is fingerprinted
 * and every response stored, so {@link #fingerprint()} and {@link #storeResult()} do not
 * apply, and {@link #fingerprintExpression()} and {@link #nonRetryable()} are refused.
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

	/**
	 * How the claim relates to the method's work. {@link Mode#TRANSACTIONAL} (the default)
	 * commits both together; {@link Mode#LEASE} commits the claim first, with a lease.
	 * @return the mode
	 */
	Mode mode() default Mode.TRANSACTIONAL;

	/**
	 * In {@link Mode#LEASE}: how long a claim holds its key before another consumer may
	 * take it over, as a duration such as {@code "30s"} or {@code "PT2M"}. Empty (the
	 * default) uses {@code idempotency.lease.duration}. Must exceed the longest invocation.
	 * @return the lease duration, or an empty string
	 */
	String lease() default "";

	/**
	 * In {@link Mode#LEASE}: exception types (and their subtypes) that retrying cannot
	 * cure. When the method throws one, its claim is marked {@code FAILED} instead of
	 * released, and a {@link dev.idempotency.IdempotencyClaimFailedException} goes to the
	 * error handler's recoverer. Added to {@code idempotency.lease.non-retryable}.
	 * @return the non-retryable exception types
	 */
	Class<? extends Throwable>[] nonRetryable() default {};

	/**
	 * Whether to store a SHA-256 fingerprint of the record value with the claim, so that a
	 * record with a known key but another payload is told from a duplicate (see
	 * {@code idempotency.lease.fingerprint-mismatch}). In either mode, on the jdbc store and
	 * record listeners only.
	 * @return whether to fingerprint the payload
	 */
	boolean fingerprint() default false;

	/**
	 * SpEL expression whose value (as a string) is fingerprinted instead of the whole record
	 * value, with the same root object as {@link #key()}.
	 * Example: {@code "payload.amount + '/' + payload.currency"}. Setting it implies
	 * {@link #fingerprint()}.
	 * @return the fingerprint expression, or an empty string
	 */
	String fingerprintExpression() default "";

	/**
	 * Whether to store the method's return value as JSON with the claim, so that a
	 * duplicate returns the stored value instead of {@code null} and a {@code @SendTo}
	 * reply is the same each time. In either mode (in the transactional mode the result
	 * commits with the claim and the method's work), on the jdbc store and record listeners
	 * only. The value must fit in {@code idempotency.lease.max-result-size}.
	 * @return whether to store the result
	 */
	boolean storeResult() default false;

	/**
	 * How the claim of a key relates to the listener method's work.
	 */
	enum Mode {

		/**
		 * The claim and the method's database work commit in one transaction: after a
		 * crash there is nothing in progress. The default.
		 */
		TRANSACTIONAL,

		/**
		 * The claim commits alone, as {@code IN_PROGRESS} with a lease on the database
		 * clock and a fencing token; the method runs outside any transaction of the
		 * starter; completion is recorded only while the token still owns the key.
		 */
		LEASE

	}

}
