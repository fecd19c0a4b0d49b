package dev.idempotency.internal.consumer;

import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.StoredResultCodec;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;

import dev.idempotency.IdempotencyClaimFailedException;
import dev.idempotency.IdempotencyContext;
import dev.idempotency.IdempotencyKeyInProgressException;
import dev.idempotency.IdempotencyResultNotStoredException;
import dev.idempotency.IdempotencyResultTooLargeException;
import dev.idempotency.LeaseLostHandler;
import dev.idempotency.LeaseLostHandler.LostLease;
import dev.idempotency.internal.key.Fingerprints;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.LeaseClaim;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessage;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * Runs {@code @Idempotent(mode = LEASE)} record listeners: claims the key on its own with
 * a lease and a fencing token, runs the method outside any transaction of the starter
 * with the token in {@link IdempotencyContext}, then completes the claim, fenced on the
 * token. A failure releases the claim, or marks it {@code FAILED} when its type is not
 * retryable. A claim held by a live lease is sent back to the error handler as
 * {@link IdempotencyKeyInProgressException}; a {@code FAILED} one as the non-retryable
 * {@link IdempotencyClaimFailedException}. A lost lease marks nothing, is counted, and is
 * passed to the application's {@link LeaseLostHandler} beans.
 */
public final class LeaseInvoker {

	private static final Log logger = LogFactory.getLog(LeaseInvoker.class);

	private final LeaseStore store;

	private final LeaseSettings settings;

	private final @Nullable StoredResultCodec results;

	private final Supplier<List<LeaseLostHandler>> leaseLostHandlers;

	private final Map<Method, LeaseOptions> options = new ConcurrentHashMap<>();

	/**
	 * Create an invoker.
	 * @param store the lease claims of the store
	 * @param settings the application-wide settings
	 * @param results writes and reads stored results, or {@code null} when the
	 * application has no JSON mapper
	 * @param leaseLostHandlers the application's handlers of lost leases
	 */
	public LeaseInvoker(LeaseStore store, LeaseSettings settings, @Nullable StoredResultCodec results,
			Supplier<List<LeaseLostHandler>> leaseLostHandlers) {
		this.store = store;
		this.settings = settings;
		this.results = results;
		this.leaseLostHandlers = leaseLostHandlers;
	}

	@Nullable Object invoke(MethodInvocation invocation, ListenerMethod method, ListenerMetrics metrics,
			ConsumerRecord<?, ?> record, ProcessedMessage message, @Nullable Object[] arguments) throws Throwable {
		LeaseOptions options = this.options.computeIfAbsent(method.method(),
				(key) -> LeaseOptions.of(method, this.settings));
		String fingerprint = options.fingerprint() ? Fingerprints.of(record, method.payload(arguments, record),
				options.fingerprintExpression(), json()) : null;
		long start = System.nanoTime();
		LeaseClaim claim = this.store.claim(message, options.lease(), fingerprint);
		metrics.claim(System.nanoTime() - start);
		if (claim.state() != LeaseClaim.State.ACQUIRED && FingerprintMismatches.differ(fingerprint, claim.fingerprint())) {
			return mismatch(method, metrics, message, arguments);
		}
		switch (claim.state()) {
			case COMPLETED:
				return duplicate(method, metrics, message, arguments, claim, options);
			case FAILED:
				metrics.message(Outcome.FAILED, DecisionSource.STORE);
				throw new IdempotencyClaimFailedException("The claim of " + describe(message) + " in "
						+ method.name() + " was marked FAILED after a non-retryable failure (" + claim.failure()
						+ "); it is not processed again. Delete its row to process it again");
			case IN_PROGRESS:
				metrics.message(Outcome.FAILED, DecisionSource.STORE);
				throw new IdempotencyKeyInProgressException("Key in scope '" + message.scope() + "' is held by "
						+ "another consumer within its lease (record " + RecordCoordinates.describe(message) + ", " + method.name() + "); retry later");
			default:
				return proceed(invocation, method, metrics, message, claim, options);
		}
	}

	private @Nullable Object proceed(MethodInvocation invocation, ListenerMethod method, ListenerMetrics metrics,
			ProcessedMessage message, LeaseClaim claim, LeaseOptions options) throws Throwable {
		long token = claim.fencingToken();
		if (claim.takenOver()) {
			logger.warn("Took over the expired lease of " + describe(message) + " in " + method.name()
					+ " with fencing token " + token + "; its previous holder stalled or died");
		}
		DeferredAcknowledgment acknowledgment = DeferredAcknowledgment.defer(invocation, method);
		Object result;
		Object previous = IdempotencyContext.bind(message.key(), token);
		try {
			result = ListenerMethodRules.requireCompleted(invocation.proceed(), invocation.getMethod());
		}
		catch (Throwable ex) {
			if (acknowledgment != null) {
				acknowledgment.discard();
			}
			throw failed(method, metrics, message, token, options, ex);
		}
		finally {
			IdempotencyContext.restore(previous);
		}
		if (acknowledgment != null && acknowledgment.isNacked()) {
			this.store.release(message, token);
			if (logger.isDebugEnabled()) {
				logger.debug("Released " + describe(message) + " in " + method.name() + ": the listener nacked it");
			}
			acknowledgment.release();
			return null;
		}
		String json = null;
		IdempotencyResultNotStoredException notStored = null;
		if (options.storeResult() && result != null) {
			try {
				json = Objects.requireNonNull(this.results, "no StoredResultCodec").write(result);
			}
			catch (RuntimeException ex) {
				notStored = new IdempotencyResultNotStoredException("The result of " + method.name() + " for "
						+ describe(message) + " could not be written as JSON; its work is done and its claim completed "
						+ "without the result: " + ex, ex);
			}
			int size = (json != null) ? json.getBytes(StandardCharsets.UTF_8).length : 0;
			if (size > this.settings.maxResultSize()) {
				notStored = new IdempotencyResultTooLargeException("The result of " + method.name() + " for "
						+ describe(message) + " is " + size + " bytes of JSON, more than "
						+ "idempotency.lease.max-result-size (" + this.settings.maxResultSize() + " bytes); its work "
						+ "is done and its claim completed without the result. Return less, or raise the limit");
				json = null;
			}
		}
		boolean completed;
		try {
			completed = completeWhileLeased(message, token, json, options.lease());
		}
		catch (RuntimeException ex) {
			if (json != null && !InfrastructureFailures.isInfrastructureFailure(ex)) {
				// the database refused the result (jsonb holds no NUL character): the work is
				// done, so the claim is completed without it, as for a result too large
				notStored = new IdempotencyResultNotStoredException("The database refused the result of "
						+ method.name() + " for " + describe(message) + "; its work is done and its claim completed "
						+ "without the result: " + ex, ex);
				completed = completeOrKeep(method, message, token, null, options.lease());
			}
			else {
				completed = incomplete(method, message, options.lease(), ex);
			}
		}
		if (completed) {
			metrics.message(Outcome.PROCESSED, DecisionSource.STORE);
			if (logger.isDebugEnabled()) {
				logger.debug("Processed " + describe(message) + " in " + method.name() + " with fencing token "
						+ token);
			}
		}
		else {
			leaseLost(method, metrics, message, token);
		}
		if (acknowledgment != null) {
			acknowledgment.release();
		}
		if (notStored != null && completed) {
			// (a lease lost to another consumer was reported as such above)
			throw notStored;
		}
		return result;
	}

	private boolean completeOrKeep(ListenerMethod method, ProcessedMessage message, long token, @Nullable String json,
			java.time.Duration lease) {
		try {
			return completeWhileLeased(message, token, json, lease);
		}
		catch (RuntimeException ex) {
			return incomplete(method, message, lease, ex);
		}
	}

	/**
	 * Log a claim that could not be completed after its work was done, and count it as
	 * completed: sending the record back would run the work again once the lease expired.
	 */
	private static boolean incomplete(ListenerMethod method, ProcessedMessage message, java.time.Duration lease,
			RuntimeException ex) {
		logger.warn("Could not complete the claim of " + describe(message) + " in " + method.name()
				+ " after its work was done, retrying for its lease of " + lease + "; it stays "
				+ "IN_PROGRESS, and a redelivery after its lease expired would process it again: " + ex);
		return true;
	}

	/**
	 * Complete the claim, retrying a completion the database failed (a connection reset, a
	 * restart) for as long as the lease lasts: the work is done, and an incomplete claim
	 * would be taken over and run again once its lease expired. Completion is fenced on
	 * the token and may be repeated, so a retry after a commit whose answer was lost still
	 * counts as completed.
	 */
	private boolean completeWhileLeased(ProcessedMessage message, long token, @Nullable String json,
			java.time.Duration lease) {
		return whileLeased(() -> this.store.complete(message, token, json), lease);
	}

	/**
	 * Run a fenced store operation, retrying it on failures of the infrastructure for as
	 * long as the lease lasts.
	 */
	private static boolean whileLeased(BooleanSupplier operation, java.time.Duration lease) {
		long deadline = System.nanoTime() + lease.toNanos();
		long backoffMillis = 100;
		while (true) {
			try {
				return operation.getAsBoolean();
			}
			catch (RuntimeException ex) {
				if (!InfrastructureFailures.isInfrastructureFailure(ex)
						|| System.nanoTime() + backoffMillis * 1_000_000 >= deadline) {
					throw ex;
				}
				try {
					Thread.sleep(backoffMillis);
				}
				catch (InterruptedException interrupted) {
					Thread.currentThread().interrupt();
					throw ex;
				}
				backoffMillis = Math.min(backoffMillis * 2, 5_000);
			}
		}
	}

	private Throwable failed(ListenerMethod method, ListenerMetrics metrics, ProcessedMessage message, long token,
			LeaseOptions options, Throwable ex) {
		metrics.message(Outcome.FAILED, DecisionSource.STORE);
		boolean nonRetryable = options.isNonRetryable(ex);
		try {
			if (nonRetryable) {
				// retried like a completion: a claim left IN_PROGRESS would be taken over once
				// its lease expired, and the method run again
				if (whileLeased(() -> this.store.fail(message, token, ex.toString()), options.lease())) {
					return new IdempotencyClaimFailedException("The claim of " + describe(message) + " in "
							+ method.name() + " is marked FAILED: the listener threw the non-retryable " + ex, ex);
				}
			}
			else {
				this.store.release(message, token);
			}
		}
		catch (RuntimeException storeFailure) {
			ex.addSuppressed(storeFailure);
		}
		if (logger.isDebugEnabled()) {
			logger.debug("Released " + describe(message) + " in " + method.name() + " after " + ex);
		}
		return ex;
	}

	private void leaseLost(ListenerMethod method, ListenerMetrics metrics, ProcessedMessage message, long token) {
		metrics.leaseLost();
		logger.warn("The claim of " + describe(message) + " in " + method.name() + " with fencing token " + token
				+ " was taken over before it completed (its lease expired): nothing was marked, and its effects "
				+ "may have been applied twice");
		LostLease lost = new LostLease(method.name(), message.scope(), message.key(), token, message.topic(),
				message.partition(), message.offset());
		for (LeaseLostHandler handler : this.leaseLostHandlers.get()) {
			try {
				handler.leaseLost(lost);
			}
			catch (RuntimeException ex) {
				logger.warn("LeaseLostHandler " + handler.getClass().getName() + " failed on " + describe(message),
						ex);
			}
		}
	}

	private @Nullable Object duplicate(ListenerMethod method, ListenerMetrics metrics, ProcessedMessage message,
			@Nullable Object[] arguments, LeaseClaim claim, LeaseOptions options) {
		metrics.message(Outcome.DUPLICATE, DecisionSource.STORE);
		if (logger.isDebugEnabled()) {
			logger.debug("Skipped duplicate " + describe(message) + " for " + method.name() + " (store)");
		}
		method.acknowledgeSkipped(arguments);
		if (options.storeResult() && claim.result() != null) {
			return Objects.requireNonNull(this.results, "no StoredResultCodec")
				.read(claim.result(), options.resultType());
		}
		return null;
	}

	private @Nullable Object mismatch(ListenerMethod method, ListenerMetrics metrics, ProcessedMessage message,
			@Nullable Object[] arguments) {
		return FingerprintMismatches.handle(this.settings.fingerprintMismatch(), method, metrics, message, arguments);
	}

	private @Nullable Function<Object, byte[]> json() {
		StoredResultCodec codec = this.results;
		return (codec != null) ? (value) -> codec.write(value).getBytes(StandardCharsets.UTF_8) : null;
	}

	private static String describe(ProcessedMessage message) {
		return RecordCoordinates.describe(message) + " (scope " + message.scope()
				+ ")";
	}

}
