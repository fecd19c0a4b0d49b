package dev.idempotency.internal.consumer;

import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.Idempotent;
import dev.idempotency.MissingKeyPolicy;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.key.DefaultIdempotencyKeyResolver;
import dev.idempotency.internal.key.KeyExpressions;
import dev.idempotency.internal.store.JdbcProcessedKeyLookup;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.store.ProcessedMessageStore;
import org.jspecify.annotations.Nullable;

import org.springframework.transaction.support.TransactionOperations;

/**
 * Works out the {@link ListenerPlan} of each {@code @Idempotent} method, once: which
 * lookup runs before the claim (the cache, the store's table, or none for a listener
 * whose duplicate claim must read its row), and how the key is claimed (in the
 * transaction of the work, with its row when the listener fingerprints payloads or
 * stores results, or with a lease).
 */
final class ListenerPlanner {

	private final ProcessedMessageStore store;

	private final IdempotencyKeyResolver keyResolver;

	private final RecordKeys keys;

	private final TransactionOperations transactions;

	private final IdempotencyMetrics metrics;

	private final @Nullable ProcessedKeyCache cache;

	private final KafkaTransactionCheck kafkaTransactions = new KafkaTransactionCheck();

	private final BatchInvoker batches;

	private final @Nullable LeaseInvoker leases;

	private @Nullable JdbcProcessedKeyLookup pollLookup;

	private @Nullable TransactionalRows rows;

	ListenerPlanner(ProcessedMessageStore store, IdempotencyKeyResolver keyResolver, MissingKeyPolicy missingKeyPolicy,
			TransactionOperations transactions, IdempotencyMetrics metrics, @Nullable ProcessedKeyCache cache,
			@Nullable LeaseInvoker leases) {
		this.store = store;
		this.keyResolver = keyResolver;
		this.keys = new RecordKeys(keyResolver, missingKeyPolicy);
		this.transactions = transactions;
		this.metrics = metrics;
		this.cache = cache;
		this.leases = leases;
		this.batches = new BatchInvoker(store, keyResolver, this.keys.missingKeys(), transactions, cache,
				this.kafkaTransactions);
	}

	void setPollLookup(@Nullable JdbcProcessedKeyLookup pollLookup) {
		this.pollLookup = pollLookup;
	}

	void setTransactionalRows(@Nullable TransactionalRows rows) {
		this.rows = rows;
	}

	ListenerPlan plan(ListenerMethod method) {
		Idempotent idempotent = method.idempotent();
		IdempotencyMetrics.ListenerMetrics meters = this.metrics.listener(method.name(), this.store.name());
		if (idempotent.mode() == Idempotent.Mode.LEASE) {
			return new ListenerPlan(method, meters, this.keys, RecordLookup.NONE, leaseClaim(method),
					(invocation, m, metrics) -> {
						throw new IllegalStateException("@Idempotent(mode = LEASE) method " + m.name()
								+ " received a batch; lease mode is supported on record listeners only");
					}, false);
		}
		if (TransactionalRows.readsRow(idempotent)) {
			// the claim must read the duplicate's row: a lookup of the key alone would skip it
			return new ListenerPlan(method, meters, this.keys, RecordLookup.NONE, rowClaim(method),
					this.batches::invoke, false);
		}
		RecordClaim claim = new TransactionalRecordClaim(this.store, this.transactions, this.cache,
				this.kafkaTransactions, null, null);
		RecordLookup lookup = lookup();
		return new ListenerPlan(method, meters, this.keys, lookup, claim, this.batches::invoke,
				lookup != RecordLookup.NONE && keyFromRecordAlone(method));
	}

	/**
	 * Whether the method's key depends on the record alone, so that it can be resolved
	 * before the listener is invoked: the default resolver reading the key header, or a
	 * key expression that does not read the payload. A resolver of the application's may
	 * read the converted payload, which only the invocation has.
	 */
	private boolean keyFromRecordAlone(ListenerMethod method) {
		if (!(this.keyResolver instanceof DefaultIdempotencyKeyResolver) || method.batchKind() != null) {
			return false;
		}
		String expression = method.idempotent().key();
		return expression.isEmpty() || !KeyExpressions.readsPayload(expression);
	}

	private RecordLookup lookup() {
		if (this.cache != null) {
			return RecordLookup.cache(this.cache, this.keyResolver);
		}
		if (this.pollLookup != null) {
			return RecordLookup.store(this.pollLookup, this.keyResolver);
		}
		return RecordLookup.NONE;
	}

	private RecordClaim rowClaim(ListenerMethod method) {
		TransactionalRows rows = this.rows;
		// the row is read in the claim's transaction, so only a store that joins it has rows
		if (rows == null || !this.store.joinsTransaction()) {
			return (invocation, record) -> {
				throw new IllegalStateException("@Idempotent method " + method.name() + " sets fingerprint, "
						+ "fingerprintExpression or storeResult, which need the jdbc store; the " + this.store.name()
						+ " store has none");
			};
		}
		return new TransactionalRecordClaim(this.store, this.transactions, this.cache, this.kafkaTransactions, rows,
				rows.options(method));
	}

	private RecordClaim leaseClaim(ListenerMethod method) {
		LeaseInvoker leases = this.leases;
		if (leases == null) {
			return (invocation, record) -> {
				throw new IllegalStateException("@Idempotent(mode = LEASE) method " + method.name()
						+ " needs a store with lease claims (the jdbc store); the " + this.store.name()
						+ " store has none");
			};
		}
		return (invocation, record) -> leases.invoke(invocation, record.method(), record.metrics(), record.record(),
				record.message(), record.arguments());
	}

}
