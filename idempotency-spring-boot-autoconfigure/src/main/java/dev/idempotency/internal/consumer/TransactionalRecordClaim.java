package dev.idempotency.internal.consumer;

import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.key.CurrentHandling;
import dev.idempotency.internal.store.JdbcClaimRows;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionOperations;

/**
 * The transactional record path, the one for every listener not in lease mode: claims
 * the key and invokes the method in one new transaction, so that the claim commits with
 * the work or not at all. A store that does not join the transaction (the Redis-only
 * store) claims before it and completes the claim after it committed. A listener that
 * fingerprints its payloads or stores its results has its claim store the fingerprint,
 * a duplicate claim read the row back, and its result written before the commit.
 * <p>
 * The cache is written only after the commit. A failure rolls the claim back with the
 * work and is rethrown for the container's error handler; a duplicate returns normally,
 * so that its offset is committed; a nack rolls back and hands the record back.
 */
final class TransactionalRecordClaim implements RecordClaim {

	private static final Object NACKED = new Object();

	private final ProcessedMessageStore store;

	private final TransactionOperations transactions;

	private final @Nullable ProcessedKeyCache cache;

	private final KafkaTransactionCheck kafkaTransactions;

	// the fingerprints and stored results of this listener, or null when it has none
	private final @Nullable TransactionalRows rows;

	private final @Nullable LeaseOptions options;

	TransactionalRecordClaim(ProcessedMessageStore store, TransactionOperations transactions,
			@Nullable ProcessedKeyCache cache, KafkaTransactionCheck kafkaTransactions,
			@Nullable TransactionalRows rows, @Nullable LeaseOptions options) {
		this.store = store;
		this.transactions = transactions;
		this.cache = cache;
		this.kafkaTransactions = kafkaTransactions;
		this.rows = rows;
		this.options = options;
	}

	@Override
	public @Nullable Object claimAndProceed(MethodInvocation invocation, RecordInvocation record) throws Throwable {
		String fingerprint = (this.rows != null && this.options != null)
				? this.rows.fingerprint(this.options, record.method(), record.record(), record.arguments()) : null;
		DeferredAcknowledgment acknowledgment = DeferredAcknowledgment.defer(invocation, record.method());
		Claim claimedBefore = null;
		Object result;
		try {
			if (this.store.joinsTransaction()) {
				result = this.transactions.execute((status) -> {
					Claim claim = claim(record, fingerprint);
					return claim.isNew() ? proceed(invocation, record, acknowledgment, status)
							: new Duplicate(read(record.message()));
				});
			}
			else {
				claimedBefore = claim(record, null);
				result = claimedBefore.isNew() ? this.transactions
					.execute((status) -> proceed(invocation, record, acknowledgment, status)) : new Duplicate(null);
			}
		}
		catch (RuntimeException | Error ex) {
			throw RecordDecisions.failed(record, claimedBefore, ListenerInvocations.original(ex));
		}
		if (result instanceof Duplicate duplicate) {
			return duplicate(record, fingerprint, duplicate.row());
		}
		if (result == NACKED || (acknowledgment != null && acknowledgment.isNacked())) {
			return RecordDecisions.nacked(record, claimedBefore, acknowledgment);
		}
		if (claimedBefore != null) {
			RecordDecisions.complete(record, claimedBefore);
		}
		markProcessed(record.message());
		RecordDecisions.processed(record);
		if (acknowledgment != null) {
			acknowledgment.release();
		}
		return result;
	}

	private Claim claim(RecordInvocation record, @Nullable String fingerprint) {
		long start = System.nanoTime();
		Claim claim = (this.rows != null) ? this.rows.claim(record.message(), fingerprint)
				: this.store.claim(record.message());
		record.metrics().claim(System.nanoTime() - start);
		return claim;
	}

	private JdbcClaimRows.@Nullable Row read(ProcessedMessage message) {
		return (this.rows != null) ? this.rows.read(message) : null;
	}

	private @Nullable Object proceed(MethodInvocation invocation, RecordInvocation record,
			@Nullable DeferredAcknowledgment acknowledgment, TransactionStatus status) {
		Object handling = CurrentHandling.bind(record.message().scope(), record.message().key());
		Object returned;
		try {
			returned = ListenerInvocations.proceed(invocation);
		}
		finally {
			CurrentHandling.restore(handling);
		}
		AbortedTransactionCheck.check(record.method());
		this.kafkaTransactions.check(record.method());
		if (acknowledgment != null && acknowledgment.isNacked()) {
			// the record is handed back: its work and claim must not outlive the nack
			status.setRollbackOnly();
			return NACKED;
		}
		if (returned != null && this.rows != null && this.options != null && this.options.storeResult()) {
			this.rows.storeResult(record.method(), record.message(), returned);
		}
		return returned;
	}

	private @Nullable Object duplicate(RecordInvocation record, @Nullable String fingerprint,
			JdbcClaimRows.@Nullable Row row) {
		TransactionalRows rows = this.rows;
		if (rows != null && row != null && FingerprintMismatches.differ(fingerprint, row.fingerprint())) {
			return FingerprintMismatches.handle(rows.settings().fingerprintMismatch(), record.method(),
					record.metrics(), record.message(), record.arguments());
		}
		markProcessed(record.message());
		RecordDecisions.duplicate(record, DecisionSource.STORE);
		// a duplicate the lookup before the claim did not know of: look the next polls up
		PollPrefetch.duplicateClaimed();
		return (rows != null && this.options != null) ? rows.storedResult(this.options, row) : null;
	}

	private void markProcessed(ProcessedMessage message) {
		if (this.cache != null) {
			this.cache.markProcessed(message.scope(), message.key());
		}
	}

	// a duplicate claim, with its row when the listener reads it
	private record Duplicate(JdbcClaimRows.@Nullable Row row) {
	}

}
