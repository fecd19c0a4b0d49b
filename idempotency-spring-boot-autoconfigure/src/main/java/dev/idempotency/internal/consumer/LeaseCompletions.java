package dev.idempotency.internal.consumer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;

import dev.idempotency.IdempotencyClaimFailedException;
import dev.idempotency.IdempotencyResultNotStoredException;
import dev.idempotency.IdempotencyResultTooLargeException;
import dev.idempotency.StoredResultCodec;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessage;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The end of a lease-mode claim, once its listener has run: completed with its result
 * (when it stores one and the result can be stored), or released or marked
 * {@code FAILED} after a failure; each fenced on the claim's token, and retried on
 * failures of the infrastructure for as long as the lease lasts.
 */
final class LeaseCompletions {

	// the lease path's decisions are logged as the LeaseInvoker's, as they were before it was split
	private static final Log logger = LogFactory.getLog(LeaseInvoker.class);

	private final LeaseStore store;

	private final LeaseSettings settings;

	private final @Nullable StoredResultCodec results;

	LeaseCompletions(LeaseStore store, LeaseSettings settings, @Nullable StoredResultCodec results) {
		this.store = store;
		this.settings = settings;
		this.results = results;
	}

	/**
	 * Complete the claim of a listener that ran, with its result when it stores one.
	 * @return whether the claim completed (or could not be and is counted as completed),
	 * and the failure to report when the result could not be stored
	 */
	Completion complete(ListenerMethod method, ProcessedMessage message, long token, LeaseOptions options,
			@Nullable Object result) {
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
		return new Completion(completed, notStored);
	}

	private boolean completeOrKeep(ListenerMethod method, ProcessedMessage message, long token, @Nullable String json,
			Duration lease) {
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
	private static boolean incomplete(ListenerMethod method, ProcessedMessage message, Duration lease,
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
			Duration lease) {
		return whileLeased(() -> this.store.complete(message, token, json), lease);
	}

	/**
	 * Run a fenced store operation, retrying it on failures of the infrastructure for as
	 * long as the lease lasts.
	 */
	private static boolean whileLeased(BooleanSupplier operation, Duration lease) {
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

	Throwable failed(ListenerMethod method, ListenerMetrics metrics, ProcessedMessage message, long token,
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

	private static String describe(ProcessedMessage message) {
		return RecordDecisions.describe(message);
	}

	/**
	 * How a claim ended.
	 *
	 * @param completed whether it completed (false: its lease was lost to another consumer)
	 * @param notStored the failure to report when the result could not be stored
	 */
	record Completion(boolean completed, @Nullable RuntimeException notStored) {
	}

}
