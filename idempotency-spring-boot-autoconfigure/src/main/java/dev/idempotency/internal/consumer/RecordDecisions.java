package dev.idempotency.internal.consumer;

import java.util.List;

import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * What the record path does once a record's fate is known: counts the decision, logs it
 * at DEBUG, and acknowledges a skipped record for a listener that would have.
 */
final class RecordDecisions {

	// logged as the interceptor's, the category applications already configure for the record path
	private static final Log logger = LogFactory.getLog(IdempotentListenerInterceptor.class);

	private RecordDecisions() {
	}

	static @Nullable Object duplicate(RecordInvocation record, DecisionSource source) {
		record.metrics().message(Outcome.DUPLICATE, source);
		if (logger.isDebugEnabled()) {
			logger.debug("Skipped duplicate " + describe(record.message()) + " for " + record.method().name() + " ("
					+ source.tag() + ")");
		}
		record.method().acknowledgeSkipped(record.arguments());
		return null;
	}

	static void processed(RecordInvocation record) {
		record.metrics().message(Outcome.PROCESSED, DecisionSource.STORE);
		if (logger.isDebugEnabled()) {
			logger.debug("Processed " + describe(record.message()) + " in " + record.method().name());
		}
	}

	static Throwable failed(RecordInvocation record, @Nullable Claim claim, Throwable ex) {
		if (claim != null) {
			Claim.releaseNew(List.of(claim), ex);
		}
		record.metrics().message(Outcome.FAILED, DecisionSource.STORE);
		if (logger.isDebugEnabled()) {
			logger.debug("Rolled back " + describe(record.message()) + " in " + record.method().name() + ": " + ex);
		}
		return ex;
	}

	static @Nullable Object nacked(RecordInvocation record, @Nullable Claim claim,
			DeferredAcknowledgment acknowledgment) {
		if (claim != null && claim.isNew()) {
			claim.release();
		}
		if (logger.isDebugEnabled()) {
			logger.debug("Rolled back " + describe(record.message()) + " in " + record.method().name()
					+ ": the listener nacked it");
		}
		acknowledgment.release();
		return null;
	}

	/**
	 * Complete a claim taken outside the transaction (the Redis-only store's), once the
	 * work committed: a failure here must not send the record back for a retry.
	 */
	static void complete(RecordInvocation record, Claim claim) {
		try {
			if (!claim.complete()) {
				logger.warn("Claim of " + describe(record.message()) + " in " + record.method().name()
						+ " was lost before completion (lease expired and taken over); the message may have "
						+ "been processed twice");
			}
		}
		catch (RuntimeException ex) {
			logger.warn("Could not complete the claim of " + describe(record.message()) + " in "
					+ record.method().name() + " after its work committed; a redelivery after the lease expires "
					+ "would process it again: " + ex);
		}
	}

	static String describe(ProcessedMessage message) {
		return RecordCoordinates.describe(message) + " (scope " + message.scope() + ")";
	}

}
