package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.MissingKeyPolicy;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.metrics.DefaultIdempotencyObservationConvention;
import dev.idempotency.internal.metrics.IdempotencyObservation;
import dev.idempotency.internal.metrics.IdempotencyObservationContext;
import dev.idempotency.internal.store.JdbcProcessedKeyLookup;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.store.ProcessedMessageStore;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.transaction.support.TransactionOperations;

/**
 * Makes an {@code @Idempotent} listener method apply its effects once per key. It finds
 * the method's {@link ListenerPlan}, worked out once by the {@link ListenerPlanner}, and
 * runs the invocation through it: the record's key, the lookup before the claim (the
 * cache, or the store's table), then the claim and the method in one new transaction
 * ({@link TransactionalRecordClaim}) or with a lease ({@link LeaseInvoker}); a batch goes
 * to the {@link BatchInvoker}. Each invocation is an {@link IdempotencyObservation#LISTENER}
 * observation unless the registry is a no-op.
 */
public final class IdempotentListenerInterceptor implements MethodInterceptor {

	private final ListenerPlanner planner;

	private final ObservationRegistry observations;

	private final Map<Method, ListenerPlan> plans = new ConcurrentHashMap<>();

	/**
	 * Create an interceptor.
	 * @param store the store that claims keys
	 * @param keyResolver resolves the key of each record
	 * @param missingKeyPolicy what to do with a record without key
	 * @param transactions runs each claim and listener invocation in a new transaction
	 * @param metrics records each decision
	 * @param cache the cache in front of the store, or {@code null}
	 */
	public IdempotentListenerInterceptor(ProcessedMessageStore store, IdempotencyKeyResolver keyResolver,
			MissingKeyPolicy missingKeyPolicy, TransactionOperations transactions, IdempotencyMetrics metrics,
			@Nullable ProcessedKeyCache cache) {
		this(store, keyResolver, missingKeyPolicy, transactions, metrics, cache, ObservationRegistry.NOOP);
	}

	/**
	 * Create an interceptor that observes each invocation.
	 * @param store the store that claims keys
	 * @param keyResolver resolves the key of each record
	 * @param missingKeyPolicy what to do with a record without key
	 * @param transactions runs each claim and listener invocation in a new transaction
	 * @param metrics records each decision
	 * @param cache the cache in front of the store, or {@code null}
	 * @param observations where each invocation is observed; {@link ObservationRegistry#NOOP}
	 * for none
	 */
	public IdempotentListenerInterceptor(ProcessedMessageStore store, IdempotencyKeyResolver keyResolver,
			MissingKeyPolicy missingKeyPolicy, TransactionOperations transactions, IdempotencyMetrics metrics,
			@Nullable ProcessedKeyCache cache, ObservationRegistry observations) {
		this(store, keyResolver, missingKeyPolicy, transactions, metrics, cache, observations, null);
	}

	/**
	 * Create an interceptor that observes each invocation and runs lease-mode listeners.
	 * @param store the store that claims keys
	 * @param keyResolver resolves the key of each record
	 * @param missingKeyPolicy what to do with a record without key
	 * @param transactions runs each claim and listener invocation in a new transaction
	 * @param metrics records each decision
	 * @param cache the cache in front of the store, or {@code null}
	 * @param observations where each invocation is observed; {@link ObservationRegistry#NOOP}
	 * for none
	 * @param leases runs {@code @Idempotent(mode = LEASE)} listeners, or {@code null} when the
	 * store has no lease claims
	 */
	public IdempotentListenerInterceptor(ProcessedMessageStore store, IdempotencyKeyResolver keyResolver,
			MissingKeyPolicy missingKeyPolicy, TransactionOperations transactions, IdempotencyMetrics metrics,
			@Nullable ProcessedKeyCache cache, ObservationRegistry observations, @Nullable LeaseInvoker leases) {
		this.observations = observations;
		this.planner = new ListenerPlanner(store, keyResolver, missingKeyPolicy, transactions, metrics, cache, leases);
	}

	/**
	 * Look the keys of each poll up in the store's table, in one statement, when there is
	 * no cache: duplicates are then skipped without a transaction.
	 * @param pollLookup the lookup, or {@code null} for none
	 */
	public void setPollLookup(@Nullable JdbcProcessedKeyLookup pollLookup) {
		this.planner.setPollLookup(pollLookup);
		this.plans.clear();
	}

	/**
	 * Store payload fingerprints and results with the claims of transactional listeners
	 * that ask for them.
	 * @param rows the fingerprints and stored results, or {@code null} when the store has
	 * none
	 */
	public void setTransactionalRows(@Nullable TransactionalRows rows) {
		this.planner.setTransactionalRows(rows);
		this.plans.clear();
	}

	@Override
	public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
		try {
			return observed(invocation, plan(invocation));
		}
		catch (Throwable ex) {
			// for a KafkaListenerErrorHandler, which sees the failure before the container
			IdempotentFailures.remember(ex);
			throw ex;
		}
	}

	private @Nullable Object observed(MethodInvocation invocation, ListenerPlan plan) throws Throwable {
		if (this.observations.isNoop()) {
			return plan.invoke(invocation, plan.metrics());
		}
		IdempotencyObservationContext context = new IdempotencyObservationContext(plan.method().name(),
				plan.method().isBatchInvocation());
		Observation observation = IdempotencyObservation.LISTENER
			.observation(null, DefaultIdempotencyObservationConvention.INSTANCE, () -> context, this.observations)
			.start();
		try (Observation.Scope scope = observation.openScope()) {
			return plan.invoke(invocation, new ObservedListenerMetrics(plan.metrics(), context));
		}
		catch (Throwable ex) {
			observation.error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
	}

	/**
	 * Return whether a listener method's plan skips known duplicates before the method is
	 * invoked (see {@link KnownDuplicates}).
	 */
	boolean skipsBeforeInvocation(Method method, Class<?> targetClass) {
		try {
			return plan(method, targetClass).skipsBeforeInvocation();
		}
		catch (IllegalStateException ex) {
			// not a method the interceptor can run: its invocation says why
			return false;
		}
	}

	/**
	 * Return the plan of a listener method, as declared on its class.
	 */
	ListenerPlan plan(Method method, Class<?> targetClass) {
		ListenerPlan plan = this.plans.get(method);
		if (plan == null) {
			ListenerMethod described = ListenerMethod.describe(method, targetClass);
			plan = this.plans.computeIfAbsent(method, (key) -> this.planner.plan(described));
		}
		return plan;
	}

	private ListenerPlan plan(MethodInvocation invocation) {
		Method method = invocation.getMethod();
		ListenerPlan plan = this.plans.get(method);
		if (plan == null) {
			Object target = invocation.getThis();
			Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : method.getDeclaringClass();
			ListenerMethod described = ListenerMethod.describe(AopUtils.getMostSpecificMethod(method, targetClass),
					targetClass);
			plan = this.plans.computeIfAbsent(method, (key) -> this.planner.plan(described));
		}
		return plan;
	}

}
