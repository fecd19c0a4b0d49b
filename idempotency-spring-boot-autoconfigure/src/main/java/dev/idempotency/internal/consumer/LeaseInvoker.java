package dev.idempotency.internal.consumer;

import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.StoredResultCodec;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Supplier;

import dev.idempotency.IdempotencyClaimFailedException;
import dev.idempotency.IdempotencyContext;
import dev.idempotency.IdempotencyKeyInProgressException;
import dev.idempotency.LeaseLostHandler;
import dev.idempotency.LeaseLostHandler.LostLease;
import dev.idempotency.internal.key.CurrentHandling;
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

	private final LeaseCompletions completions;

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
		this.completions = new LeaseCompletions(store, settings, results);
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
		Object handling = CurrentHandling.bind(message.scope(), message.key());
		try {
			result = ListenerMethodRules.requireCompleted(invocation.proceed(), invocation.getMethod());
		}
		catch (Throwable ex) {
			if (acknowledgment != null) {
				acknowledgment.discard();
			}
			throw this.completions.failed(method, metrics, message, token, options, ex);
		}
		finally {
			CurrentHandling.restore(handling);
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
		LeaseCompletions.Completion completion = this.completions.complete(method, message, token, options, result);
		boolean completed = completion.completed();
		RuntimeException notStored = completion.notStored();
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
