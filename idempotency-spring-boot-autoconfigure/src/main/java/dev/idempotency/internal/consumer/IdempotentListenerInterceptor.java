package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.InboundMessage;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.MissingKeyPolicy;
import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.internal.key.StoredKey;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.internal.metrics.DefaultIdempotencyObservationConvention;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.internal.metrics.IdempotencyObservation;
import dev.idempotency.internal.metrics.IdempotencyObservationContext;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.Claim;
import dev.idempotency.internal.store.JdbcClaimRows;
import dev.idempotency.internal.store.JdbcProcessedKeyLookup;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.TransactionSystemException;
import org.springframework.transaction.support.TransactionOperations;

/**
 * Makes an {@code @Idempotent} listener method apply its effects once per key: asks the
 * cache (when there is one), claims the key in a new transaction, invokes the method in
 * that transaction when the key is new, and skips it when the key was processed. The
 * cache is written only after the transaction committed. A failure rolls the claim back with the
 * method's work and is rethrown to the container's error handler; a skipped duplicate
 * returns normally, so its offset is committed. Each invocation is an
 * {@link IdempotencyObservation#LISTENER} observation unless the registry is a no-op.
 * Listeners in {@code mode = LEASE} are handed to the {@link LeaseInvoker} once their key
 * is resolved. Transactional listeners with a payload fingerprint or a stored result skip
 * the cache and the poll's look-up: their claim stores the fingerprint, a duplicate claim
 * reads the row back (see {@link TransactionalRows}), and the result is written before the
 * transaction commits.
 */
public final class IdempotentListenerInterceptor implements MethodInterceptor {

	private static final Log logger = LogFactory.getLog(IdempotentListenerInterceptor.class);

	private static final Object DUPLICATE = new Object();

	private static final Object NACKED = new Object();

	// the listener's own failure, for when the rollback after it fails and hides it
	private static final ThreadLocal<Throwable> LISTENER_FAILURE = new ThreadLocal<>();

	private final ProcessedMessageStore store;

	private final IdempotencyKeyResolver keyResolver;

	private final MissingKeys missingKeys;

	private final TransactionOperations transactions;

	private final IdempotencyMetrics metrics;

	private final ObservationRegistry observations;

	private final @Nullable ProcessedKeyCache cache;

	private @Nullable JdbcProcessedKeyLookup pollLookup;

	private @Nullable TransactionalRows rows;

	private final Map<Method, Listener> listeners = new ConcurrentHashMap<>();

	private final BatchInvoker batches;

	private final KafkaTransactionCheck kafkaTransactions = new KafkaTransactionCheck();

	private final @Nullable LeaseInvoker leases;

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
		this.leases = leases;
		this.observations = observations;
		this.store = store;
		this.keyResolver = keyResolver;
		this.missingKeys = new MissingKeys(missingKeyPolicy);
		this.transactions = transactions;
		this.metrics = metrics;
		this.cache = cache;
		this.batches = new BatchInvoker(store, keyResolver, this.missingKeys, transactions, cache,
				this.kafkaTransactions);
	}

	/**
	 * Look the keys of each poll up in the store's table, in one statement, when there is
	 * no cache: duplicates are then skipped without a transaction.
	 * @param pollLookup the lookup, or {@code null} for none
	 */
	public void setPollLookup(@Nullable JdbcProcessedKeyLookup pollLookup) {
		this.pollLookup = pollLookup;
	}

	/**
	 * Store payload fingerprints and results with the claims of transactional listeners
	 * that ask for them.
	 * @param rows the fingerprints and stored results, or {@code null} when the store has
	 * none
	 */
	public void setTransactionalRows(@Nullable TransactionalRows rows) {
		this.rows = rows;
	}

	@Override
	public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
		try {
			return observed(invocation);
		}
		catch (Throwable ex) {
			// for a KafkaListenerErrorHandler, which sees the failure before the container
			IdempotentFailures.remember(ex);
			throw ex;
		}
	}

	private @Nullable Object observed(MethodInvocation invocation) throws Throwable {
		Listener listener = listener(invocation);
		if (this.observations.isNoop()) {
			return invoke(invocation, listener);
		}
		IdempotencyObservationContext context = new IdempotencyObservationContext(listener.method().name(),
				listener.method().isBatchInvocation());
		Observation observation = IdempotencyObservation.LISTENER
			.observation(null, DefaultIdempotencyObservationConvention.INSTANCE, () -> context, this.observations)
			.start();
		try (Observation.Scope scope = observation.openScope()) {
			ListenerMetrics observed = new ObservedListenerMetrics(listener.metrics(), context);
			return invoke(invocation, new Listener(listener.method(), observed));
		}
		catch (Throwable ex) {
			observation.error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
	}

	private @Nullable Object invoke(MethodInvocation invocation, Listener listener) throws Throwable {
		@Nullable Object[] arguments = invocation.getArguments();
		if (listener.method().isBatchInvocation()) {
			if (listener.method().idempotent().mode() == Idempotent.Mode.LEASE) {
				throw new IllegalStateException("@Idempotent(mode = LEASE) method " + listener.method().name()
						+ " received a batch; lease mode is supported on record listeners only");
			}
			return this.batches.invoke(invocation, listener.method(), listener.metrics());
		}
		ConsumerRecord<?, ?> record = currentRecord(arguments, listener.method());
		String key = this.keyResolver.resolve(new InboundMessage(record, listener.method().payload(arguments, record),
				listener.method().method(), listener.method().idempotent()));
		if (key == null || key.isBlank()) {
			key = this.missingKeys.keyFor(record, listener.method());
			if (key == null) {
				listener.metrics().message(Outcome.REJECTED, DecisionSource.NONE);
				if (this.missingKeys.rejects()) {
					throw this.missingKeys.rejection(record, listener.method());
				}
				acknowledge(listener, arguments);
				return null;
			}
		}
		ProcessedMessage message = new ProcessedMessage(listener.method().scope(record), StoredKey.of(key), record.topic(),
				record.partition(), record.offset());
		if (listener.method().idempotent().mode() == Idempotent.Mode.LEASE) {
			return leases(listener).invoke(invocation, listener.method(), listener.metrics(), record, message,
					arguments);
		}
		return claimAndProceed(invocation, listener, record, message, arguments);
	}

	private @Nullable Object claimAndProceed(MethodInvocation invocation, Listener listener,
			ConsumerRecord<?, ?> record, ProcessedMessage message, @Nullable Object[] arguments) throws Throwable {
		ProcessedKeyCache cache = this.cache;
		TransactionalRows rows = TransactionalRows.readsRow(listener.method().idempotent()) ? rows(listener) : null;
		if (rows != null) {
			// the claim must read the duplicate's row: a look-up of the key alone would skip it
			return claimAndProceed(invocation, listener, record, message, arguments, rows);
		}
		if (cache != null && PollPrefetch.isProcessed(cache, this.keyResolver, listener.method(), record,
				message.scope(), message.key())) {
			return duplicate(listener, message, arguments, DecisionSource.CACHE);
		}
		JdbcProcessedKeyLookup pollLookup = this.pollLookup;
		if (cache == null && pollLookup != null && PollPrefetch.isProcessed(pollLookup, this.keyResolver,
				listener.method(), record, message.scope(), message.key())) {
			return duplicate(listener, message, arguments, DecisionSource.STORE);
		}
		DeferredAcknowledgment acknowledgment = deferAcknowledgment(invocation, listener.method());
		Object result;
		Claim claim = null;
		try {
			if (this.store.joinsTransaction()) {
				result = this.transactions.execute((status) -> claim(listener, message).isNew()
						? proceedUnlessNacked(invocation, listener, acknowledgment, status) : DUPLICATE);
			}
			else {
				claim = claim(listener, message);
				result = claim.isNew() ? this.transactions.execute(
						(status) -> proceedUnlessNacked(invocation, listener, acknowledgment, status)) : DUPLICATE;
			}
		}
		catch (RuntimeException | Error ex) {
			throw failed(listener, message, claim, original(ex));
		}
		if (result == DUPLICATE) {
			if (cache != null) {
				cache.markProcessed(message.scope(), message.key());
			}
			return duplicate(listener, message, arguments, DecisionSource.STORE);
		}
		if (result == NACKED || (acknowledgment != null && acknowledgment.isNacked())) {
			return nacked(listener, message, claim, acknowledgment);
		}
		if (claim != null) {
			complete(claim, message, listener);
		}
		if (cache != null) {
			cache.markProcessed(message.scope(), message.key());
		}
		listener.metrics().message(Outcome.PROCESSED, DecisionSource.STORE);
		if (logger.isDebugEnabled()) {
			logger.debug("Processed " + describe(message) + " in " + listener.method().name());
		}
		if (acknowledgment != null) {
			acknowledgment.release();
		}
		return result;
	}

	private @Nullable Object claimAndProceed(MethodInvocation invocation, Listener listener,
			ConsumerRecord<?, ?> record, ProcessedMessage message, @Nullable Object[] arguments,
			TransactionalRows rows) throws Throwable {
		LeaseOptions options = rows.options(listener.method());
		String fingerprint = rows.fingerprint(options, listener.method(), record, arguments);
		DeferredAcknowledgment acknowledgment = deferAcknowledgment(invocation, listener.method());
		Object result;
		try {
			result = this.transactions.execute((status) -> {
				long start = System.nanoTime();
				Claim claim = rows.claim(message, fingerprint);
				listener.metrics().claim(System.nanoTime() - start);
				if (!claim.isNew()) {
					return new DuplicateRow(rows.read(message));
				}
				Object returned = proceedUnlessNacked(invocation, listener, acknowledgment, status);
				if (returned != NACKED && returned != null && options.storeResult()) {
					rows.storeResult(listener.method(), message, returned);
				}
				return returned;
			});
		}
		catch (RuntimeException | Error ex) {
			throw failed(listener, message, null, original(ex));
		}
		ProcessedKeyCache cache = this.cache;
		if (result instanceof DuplicateRow duplicate) {
			if (duplicate.row() != null && FingerprintMismatches.differ(fingerprint, duplicate.row().fingerprint())) {
				return FingerprintMismatches.handle(rows.settings().fingerprintMismatch(), listener.method(),
						listener.metrics(), message, arguments);
			}
			if (cache != null) {
				cache.markProcessed(message.scope(), message.key());
			}
			duplicate(listener, message, arguments, DecisionSource.STORE);
			return rows.storedResult(options, duplicate.row());
		}
		if (result == NACKED || (acknowledgment != null && acknowledgment.isNacked())) {
			return nacked(listener, message, null, acknowledgment);
		}
		if (cache != null) {
			cache.markProcessed(message.scope(), message.key());
		}
		listener.metrics().message(Outcome.PROCESSED, DecisionSource.STORE);
		if (logger.isDebugEnabled()) {
			logger.debug("Processed " + describe(message) + " in " + listener.method().name());
		}
		if (acknowledgment != null) {
			acknowledgment.release();
		}
		return result;
	}

	private TransactionalRows rows(Listener listener) {
		TransactionalRows rows = this.rows;
		if (rows == null) {
			throw new IllegalStateException("@Idempotent method " + listener.method().name() + " sets fingerprint, "
					+ "fingerprintExpression or storeResult, which need the jdbc store; the " + this.store.name()
					+ " store has none");
		}
		return rows;
	}

	private @Nullable Object proceedUnlessNacked(MethodInvocation invocation, Listener listener,
			@Nullable DeferredAcknowledgment acknowledgment, TransactionStatus status) {
		Object returned = proceed(invocation);
		AbortedTransactionCheck.check(listener.method());
		this.kafkaTransactions.check(listener.method());
		if (acknowledgment != null && acknowledgment.isNacked()) {
			// the record is handed back: its work and claim must not outlive the nack
			status.setRollbackOnly();
			return NACKED;
		}
		return returned;
	}

	private @Nullable Object nacked(Listener listener, ProcessedMessage message, @Nullable Claim claim,
			DeferredAcknowledgment acknowledgment) {
		if (claim != null && claim.isNew()) {
			claim.release();
		}
		if (logger.isDebugEnabled()) {
			logger.debug("Rolled back " + describe(message) + " in " + listener.method().name()
					+ ": the listener nacked it");
		}
		acknowledgment.release();
		return null;
	}

	/**
	 * Give the listener an acknowledgment that passes its calls on after the transaction.
	 * @param invocation the invocation, whose arguments are replaced
	 * @param method the listener method
	 * @return the deferred acknowledgment, or {@code null} when the method takes none
	 */
	static @Nullable DeferredAcknowledgment deferAcknowledgment(MethodInvocation invocation, ListenerMethod method) {
		if (!method.takesAcknowledgment()) {
			return null;
		}
		@Nullable Object[] arguments = invocation.getArguments().clone();
		DeferredAcknowledgment deferred = DeferredAcknowledgment.replace(method, arguments, null);
		if (deferred != null) {
			((ProxyMethodInvocation) invocation).setArguments(arguments);
		}
		return deferred;
	}

	/**
	 * Return the failure to report: the listener's own exception, also when the rollback
	 * after it failed too (a killed connection) and the transaction threw the rollback's
	 * exception instead, which is then kept as suppressed.
	 * @param ex what the transaction threw
	 * @return the failure
	 */
	static Throwable original(Throwable ex) {
		Throwable listenerFailure = LISTENER_FAILURE.get();
		LISTENER_FAILURE.remove();
		Throwable failure = ex;
		if (ex instanceof TransactionSystemException rollbackFailure
				&& rollbackFailure.getApplicationException() != null) {
			failure = rollbackFailure.getApplicationException();
			failure.addSuppressed(rollbackFailure);
		}
		else if (listenerFailure != null && ex != listenerFailure
				&& !(ex instanceof CheckedListenerException checked && checked.getCause() == listenerFailure)) {
			failure = listenerFailure;
			failure.addSuppressed(ex);
		}
		if (failure instanceof CheckedListenerException checked && checked.getCause() != null) {
			failure = checked.getCause();
		}
		return failure;
	}

	private static void complete(Claim claim, ProcessedMessage message, Listener listener) {
		// the work is committed: a failure here must not send the record back for a retry
		try {
			if (!claim.complete()) {
				logger.warn("Claim of " + describe(message) + " in " + listener.method().name()
						+ " was lost before completion (lease expired and taken over); the message may have "
						+ "been processed twice");
			}
		}
		catch (RuntimeException ex) {
			logger.warn("Could not complete the claim of " + describe(message) + " in " + listener.method().name()
					+ " after its work committed; a redelivery after the lease expires would process it again: "
					+ ex);
		}
	}

	private Claim claim(Listener listener, ProcessedMessage message) {
		long start = System.nanoTime();
		Claim claim = this.store.claim(message);
		listener.metrics().claim(System.nanoTime() - start);
		return claim;
	}

	static @Nullable Object proceed(MethodInvocation invocation) {
		LISTENER_FAILURE.remove();
		try {
			return ListenerMethod.requireCompleted(invocation.proceed(), invocation.getMethod());
		}
		catch (RuntimeException | Error ex) {
			LISTENER_FAILURE.set(ex);
			throw ex;
		}
		catch (Throwable ex) {
			LISTENER_FAILURE.set(ex);
			throw new CheckedListenerException(ex);
		}
	}


	private @Nullable Object duplicate(Listener listener, ProcessedMessage message, @Nullable Object[] arguments,
			DecisionSource source) {
		listener.metrics().message(Outcome.DUPLICATE, source);
		if (logger.isDebugEnabled()) {
			logger.debug("Skipped duplicate " + describe(message) + " for " + listener.method().name() + " ("
					+ source.tag() + ")");
		}
		acknowledge(listener, arguments);
		return null;
	}

	private Throwable failed(Listener listener, ProcessedMessage message, @Nullable Claim claim, Throwable ex) {
		if (claim != null) {
			Claim.releaseNew(List.of(claim), ex);
		}
		listener.metrics().message(Outcome.FAILED, DecisionSource.STORE);
		if (logger.isDebugEnabled()) {
			logger.debug("Rolled back " + describe(message) + " in " + listener.method().name() + ": " + ex);
		}
		return ex;
	}

	private LeaseInvoker leases(Listener listener) {
		if (this.leases == null) {
			throw new IllegalStateException("@Idempotent(mode = LEASE) method " + listener.method().name()
					+ " needs a store with lease claims (the jdbc store); the " + this.store.name() + " store has none");
		}
		return this.leases;
	}

	private Listener listener(MethodInvocation invocation) {
		Method method = invocation.getMethod();
		Listener listener = this.listeners.get(method);
		if (listener == null) {
			Object target = invocation.getThis();
			Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : method.getDeclaringClass();
			ListenerMethod described = ListenerMethod.describe(AopUtils.getMostSpecificMethod(method, targetClass),
					targetClass);
			listener = this.listeners.computeIfAbsent(method,
					(key) -> new Listener(described, this.metrics.listener(described.name(), this.store.name())));
		}
		return listener;
	}

	private static ConsumerRecord<?, ?> currentRecord(@Nullable Object[] arguments, ListenerMethod method) {
		for (Object argument : arguments) {
			if (argument instanceof ConsumerRecord<?, ?> record) {
				return record;
			}
		}
		ConsumerRecord<?, ?> record = CurrentRecord.get();
		if (record == null) {
			throw new IllegalStateException("No Kafka record is bound to the thread invoking @Idempotent method "
					+ method.name() + "; it must be invoked by a listener container created by a Spring "
					+ "KafkaListenerContainerFactory bean, or take the ConsumerRecord as a parameter");
		}
		return record;
	}

	private static void acknowledge(Listener listener, @Nullable Object[] arguments) {
		acknowledge(listener.method(), arguments);
	}

	static void acknowledge(ListenerMethod method, @Nullable Object[] arguments) {
		// With manual acknowledgment the listener would have acknowledged; it was not
		// invoked, so acknowledge for it, or the offset would never be committed.
		Acknowledgment acknowledgment = method.acknowledgment(arguments);
		if (acknowledgment != null) {
			acknowledgment.acknowledge();
		}
	}

	private static String describe(ProcessedMessage message) {
		return RecordCoordinates.describe(message) + " (scope " + message.scope()
				+ ")";
	}

	private record Listener(ListenerMethod method, ListenerMetrics metrics) {
	}

	// a duplicate claim of a listener that reads its row: what the row held
	private record DuplicateRow(JdbcClaimRows.@Nullable Row row) {
	}

	static final class CheckedListenerException extends RuntimeException {

		private static final long serialVersionUID = 1L;

		CheckedListenerException(Throwable cause) {
			super(cause);
		}

		@Override
		public synchronized Throwable getCause() {
			return super.getCause();
		}

	}

}
