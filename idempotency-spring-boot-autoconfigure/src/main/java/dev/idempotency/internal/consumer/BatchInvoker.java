package dev.idempotency.internal.consumer;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntUnaryOperator;

import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.InboundMessage;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.key.StoredKey;
import dev.idempotency.internal.store.FailedLeaseKeyException;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.transaction.support.TransactionOperations;

/**
 * The batch path of the interceptor: one cache round trip for all keys, one transaction
 * and one multi-row claim for the batch, and one invocation of the listener with only the
 * new records, in their original order and in the collection type it declared. A batch
 * of duplicates does not invoke the listener.
 */
final class BatchInvoker {

	private static final Log logger = LogFactory.getLog(BatchInvoker.class);

	static final Object NOTHING_NEW = new Object();

	private final ProcessedMessageStore store;

	private final IdempotencyKeyResolver keyResolver;

	private final MissingKeys missingKeys;

	private final TransactionOperations transactions;

	private final @Nullable ProcessedKeyCache cache;

	private final KafkaTransactionCheck kafkaTransactions;

	private final BatchClaims claims;

	BatchInvoker(ProcessedMessageStore store, IdempotencyKeyResolver keyResolver, MissingKeys missingKeys,
			TransactionOperations transactions, @Nullable ProcessedKeyCache cache, KafkaTransactionCheck kafkaTransactions) {
		this.kafkaTransactions = kafkaTransactions;
		this.store = store;
		this.keyResolver = keyResolver;
		this.missingKeys = missingKeys;
		this.transactions = transactions;
		this.cache = cache;
		this.claims = new BatchClaims(store, cache);
	}

	@Nullable Object invoke(MethodInvocation invocation, ListenerMethod method, ListenerMetrics metrics)
			throws Throwable {
		Object batch = invocation.getArguments()[method.batchIndex()];
		List<ConsumerRecord<?, ?>> records = BatchShapes.records(method, batch);
		List<?> payloads = (method.batchKind() == ListenerMethod.BatchKind.PAYLOAD_LIST) ? (List<?>) batch : null;
		return invoke((ProxyMethodInvocation) invocation, method, metrics, records, payloads,
				BatchShapes.containerIndexes(method, records), false);
	}

	private @Nullable Object invoke(ProxyMethodInvocation invocation, ListenerMethod method, ListenerMetrics metrics,
			List<ConsumerRecord<?, ?>> records, @Nullable List<?> payloads, IntUnaryOperator containerIndexes,
			boolean prefixOfFailedBatch) throws Throwable {
		// kept untouched, to run the listener again on the records before one it names as failed
		ProxyMethodInvocation pristine = (ProxyMethodInvocation) invocation.invocableClone();
		@Nullable Object[] arguments = invocation.getArguments();
		Object batch = arguments[method.batchIndex()];
		ProcessedMessage[] messages = new ProcessedMessage[records.size()];
		int rejected = 0;
		int firstRejected = -1;
		for (int i = 0; i < messages.length; i++) {
			ConsumerRecord<?, ?> record = records.get(i);
			Object payload = (payloads != null) ? payloads.get(i) : record.value();
			String key = this.keyResolver.resolve(new InboundMessage(record, payload, method.method(),
					method.idempotent()));
			if (key == null || key.isBlank()) {
				key = this.missingKeys.keyFor(record, method);
			}
			if (key == null) {
				rejected++;
				if (firstRejected < 0 && this.missingKeys.rejects()) {
					firstRejected = i;
				}
				continue;
			}
			messages[i] = new ProcessedMessage(method.scope(record), StoredKey.of(key), record.topic(), record.partition(),
					record.offset());
		}
		metrics.messages(Outcome.REJECTED, DecisionSource.NONE, rejected);
		List<Integer> candidates = this.claims.notCached(messages, metrics);
		BatchAttempt attempt = new BatchAttempt(invocation, method, batch, records, payloads, candidates, messages,
				containerIndexes, firstRejected);
		Object result;
		try {
			if (this.store.joinsTransaction()) {
				result = this.transactions.execute((status) -> {
					attempt.claims.addAll(this.claims.claim(candidates, messages, metrics));
					Object returned = attempt.proceedWithNew();
					AbortedTransactionCheck.check(method);
					this.kafkaTransactions.check(method);
					if (attempt.isNacked() && !this.store.unclaimAll(attempt.handedBack())) {
						status.setRollbackOnly();
						attempt.acknowledgment.nackAll();
					}
					return returned;
				});
			}
			else {
				attempt.claims.addAll(this.claims.claim(candidates, messages, metrics));
				result = this.transactions.execute((status) -> {
					Object returned = attempt.proceedWithNew();
					AbortedTransactionCheck.check(method);
					this.kafkaTransactions.check(method);
					return returned;
				});
			}
		}
		catch (RuntimeException | Error ex) {
			// the listener's own exception, also when the rollback after it failed
			Throwable failure = ListenerInvocations.original(ex);
			if (failure instanceof BatchListenerFailedException batchFailure) {
				if (!this.store.joinsTransaction()
						&& this.transactions == TransactionOperations.withoutTransaction()) {
					throw keepBefore(batchFailure, attempt, metrics);
				}
				this.claims.failed(attempt.claims, 1, metrics, batchFailure);
				return retryBefore(batchFailure, attempt, pristine, metrics);
			}
			ConsumerRecord<?, ?> failedKey = (failure instanceof FailedLeaseKeyException leaseFailed)
					? attempt.recordOf(leaseFailed.failedMessage()) : null;
			if (failedKey != null) {
				// the claim met a key a lease-mode listener marked FAILED: as a record
				// listener's, that record goes to the recoverer, and only that one
				this.claims.failed(attempt.claims, 1, metrics, failure);
				return retryBefore(new BatchListenerFailedException(failure.getMessage(), failure, failedKey), attempt,
						pristine, metrics);
			}
			throw this.claims.failed(attempt.claims, candidates.size(), metrics, failure);
		}
		List<Claim> handedBackClaims = attempt.isNacked() ? attempt.handedBackClaims() : List.of();
		int handedBack = handedBackClaims.size();
		// the records kept were applied: complete them before anything else can fail
		BatchClaims.complete(attempt.claims, method);
		BatchClaims.release(handedBackClaims, method);
		if (this.cache != null) {
			for (int i = 0; i < attempt.kept.size() - handedBack; i++) {
				ProcessedMessage message = messages[attempt.kept.get(i)];
				this.cache.markProcessed(message.scope(), message.key());
			}
		}
		metrics.messages(Outcome.PROCESSED, DecisionSource.STORE, attempt.kept.size() - handedBack);
		metrics.messages(Outcome.DUPLICATE, DecisionSource.STORE, candidates.size() - attempt.kept.size());
		if (logger.isDebugEnabled()) {
			logger.debug(method.name() + ": batch of " + records.size() + ", " + attempt.kept.size() + " new ("
					+ handedBack + " handed back with a nack), " + (candidates.size() - attempt.kept.size())
					+ " duplicates in the store, " + (records.size() - rejected - candidates.size())
					+ " in the cache, " + rejected + " rejected");
		}
		if (prefixOfFailedBatch && attempt.isNacked()) {
			// the listener handed back records before the one it named as failed the first time
			throw new BatchListenerFailedException("Records handed back while retrying the records before a failed one",
					records.get(attempt.position(Math.max(0, attempt.acknowledgment.nackIndex()))));
		}
		boolean nackedBeforeRejected = attempt.isNacked()
				&& attempt.position(Math.max(0, attempt.acknowledgment.nackIndex())) < firstRejected;
		if (firstRejected >= 0 && !nackedBeforeRejected) {
			// Everything else in the batch is committed. Name the first record without a key, so
			// that the error handler commits the records before it and retries or recovers from
			// it; the records after it come back as duplicates.
			ConsumerRecord<?, ?> record = records.get(firstRejected);
			if (attempt.acknowledgment != null) {
				attempt.acknowledgment.discard();
			}
			throw new BatchListenerFailedException("Record without idempotency key",
					this.missingKeys.rejection(record, method),
					record);
		}
		if (attempt.acknowledgment != null && !prefixOfFailedBatch) {
			attempt.acknowledgment.release();
		}
		if (result == NOTHING_NEW) {
			if (!prefixOfFailedBatch) {
				method.acknowledgeSkipped(arguments);
			}
			return null;
		}
		return result;
	}

	/**
	 * The listener named a record of the batch it saw as failed, and the whole batch
	 * rolled back. Apply the records before it again, in a transaction of their own, then
	 * name it in the batch the container delivered, so that the error handler commits the
	 * records before it and retries or recovers it.
	 */
	private @Nullable Object retryBefore(BatchListenerFailedException ex, BatchAttempt attempt,
			ProxyMethodInvocation pristine, ListenerMetrics metrics) throws Throwable {
		int failed = attempt.positionOf(ex);
		if (failed < 0) {
			// a record the batch does not hold: nothing can be committed
			Throwable cause = (ex.getCause() != null) ? ex.getCause() : ex;
			throw (cause instanceof RuntimeException) ? cause : new IllegalStateException(ex.getMessage(), cause);
		}
		if (attempt.keptBefore(failed) || (attempt.firstRejected >= 0 && attempt.firstRejected < failed)
				|| (attempt.claims.isEmpty() && attempt.candidateBefore(failed))) {
			ListenerMethod method = attempt.method;
			List<Integer> prefix = new ArrayList<>(failed);
			for (int i = 0; i < failed; i++) {
				prefix.add(i);
			}
			@Nullable Object[] arguments = pristine.getArguments();
			arguments[method.batchIndex()] = BatchShapes.filtered(method, attempt.batch, attempt.records, attempt.payloads, prefix);
			pristine.setArguments(arguments);
			invoke(pristine, method, metrics, attempt.records.subList(0, failed),
					(attempt.payloads != null) ? attempt.payloads.subList(0, failed) : null, attempt.containerIndexes,
					true);
		}
		// named by the record: a List of payloads behind a filter counts other indexes
		throw new BatchListenerFailedException(ex.getMessage(), ex.getCause(), attempt.records.get(failed));
	}

	/**
	 * The listener named a record of the batch it saw as failed, and no transaction rolled
	 * back its work on the records before it (a store that joins none, and no transaction
	 * manager): complete their claims instead of running them again, release the others,
	 * and name the failed record (or a record without key before it) in the batch the
	 * container delivered, so that the error handler commits the records before it.
	 */
	private BatchListenerFailedException keepBefore(BatchListenerFailedException ex, BatchAttempt attempt,
			ListenerMetrics metrics) {
		int failed = attempt.positionOf(ex);
		if (failed < 0) {
			// a record the batch does not hold: keep nothing, commit nothing
			this.claims.failed(attempt.claims, 1, metrics, ex);
			return ex;
		}
		List<Claim> applied = attempt.claimsBefore(failed);
		this.claims.failed(attempt.claims, 1, metrics, ex);
		BatchClaims.complete(applied, attempt.method);
		metrics.messages(Outcome.PROCESSED, DecisionSource.STORE, applied.size());
		if (attempt.acknowledgment != null) {
			attempt.acknowledgment.discard();
		}
		if (attempt.firstRejected >= 0 && attempt.firstRejected < failed) {
			ConsumerRecord<?, ?> record = attempt.records.get(attempt.firstRejected);
			return new BatchListenerFailedException("Record without idempotency key",
					this.missingKeys.rejection(record, attempt.method), record);
		}
		return new BatchListenerFailedException(ex.getMessage(), ex.getCause(), attempt.records.get(failed));
	}

}
