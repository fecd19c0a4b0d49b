package dev.idempotency.consumer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.InboundMessage;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.consumer.IdempotentListenerInterceptor.CheckedListenerException;
import dev.idempotency.key.MissingKeyPolicy;
import dev.idempotency.key.RecordCoordinates;
import dev.idempotency.key.StoredKey;
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
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
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

	private static final Object NOTHING_NEW = new Object();

	private final ProcessedMessageStore store;

	private final IdempotencyKeyResolver keyResolver;

	private final MissingKeyPolicy missingKeyPolicy;

	private final TransactionOperations transactions;

	private final @Nullable ProcessedKeyCache cache;

	BatchInvoker(ProcessedMessageStore store, IdempotencyKeyResolver keyResolver, MissingKeyPolicy missingKeyPolicy,
			TransactionOperations transactions, @Nullable ProcessedKeyCache cache) {
		this.store = store;
		this.keyResolver = keyResolver;
		this.missingKeyPolicy = missingKeyPolicy;
		this.transactions = transactions;
		this.cache = cache;
	}

	@Nullable Object invoke(MethodInvocation invocation, ListenerMethod method, ListenerMetrics metrics)
			throws Throwable {
		@Nullable Object[] arguments = invocation.getArguments();
		Object batch = arguments[method.batchIndex()];
		List<ConsumerRecord<?, ?>> records = records(method, batch);
		List<?> payloads = (method.batchKind() == ListenerMethod.BatchKind.PAYLOAD_LIST) ? (List<?>) batch : null;
		String scope = method.scope();
		ProcessedMessage[] messages = new ProcessedMessage[records.size()];
		int rejected = 0;
		int firstRejected = -1;
		for (int i = 0; i < messages.length; i++) {
			ConsumerRecord<?, ?> record = records.get(i);
			Object payload = (payloads != null) ? payloads.get(i) : record.value();
			String key = this.keyResolver.resolve(new InboundMessage(record, payload, method.method(),
					method.idempotent()));
			if (key == null || key.isBlank()) {
				key = keyForMissing(record, method);
			}
			if (key == null) {
				rejected++;
				if (firstRejected < 0 && this.missingKeyPolicy == MissingKeyPolicy.REJECT) {
					firstRejected = i;
				}
				continue;
			}
			messages[i] = new ProcessedMessage(scope, StoredKey.of(key), record.topic(), record.partition(),
					record.offset());
		}
		metrics.messages(Outcome.REJECTED, DecisionSource.NONE, rejected);
		List<Integer> candidates = notCached(scope, messages, metrics);
		List<Integer> kept = new ArrayList<>();
		List<Claim> claims = new ArrayList<>();
		Object result;
		try {
			if (this.store.joinsTransaction()) {
				result = this.transactions.execute((status) -> {
					claims.addAll(claim(candidates, messages, metrics));
					return proceedWithNew(invocation, method, batch, records, payloads, candidates, claims, kept);
				});
			}
			else {
				claims.addAll(claim(candidates, messages, metrics));
				result = this.transactions.execute((status) -> proceedWithNew(invocation, method, batch, records,
						payloads, candidates, claims, kept));
			}
		}
		catch (CheckedListenerException ex) {
			throw failed(claims, candidates.size(), metrics, ex.getCause());
		}
		catch (BatchListenerFailedException ex) {
			// The listener named a record of the batch it saw, but the whole batch rolled back:
			// the error handler must not commit the records before it.
			Throwable cause = (ex.getCause() != null) ? ex.getCause() : ex;
			throw failed(claims, candidates.size(), metrics,
					(cause instanceof RuntimeException) ? cause : new IllegalStateException(ex.getMessage(), cause));
		}
		catch (RuntimeException | Error ex) {
			throw failed(claims, candidates.size(), metrics, ex);
		}
		complete(claims, method);
		if (this.cache != null) {
			for (int index : candidates) {
				this.cache.markProcessed(scope, messages[index].key());
			}
		}
		metrics.messages(Outcome.PROCESSED, DecisionSource.STORE, kept.size());
		metrics.messages(Outcome.DUPLICATE, DecisionSource.STORE, candidates.size() - kept.size());
		if (logger.isDebugEnabled()) {
			logger.debug(method.name() + ": batch of " + records.size() + ", " + kept.size() + " new, "
					+ (candidates.size() - kept.size()) + " duplicates in the store, "
					+ (records.size() - rejected - candidates.size()) + " in the cache, " + rejected + " rejected");
		}
		if (firstRejected >= 0) {
			// Everything else in the batch is committed. Name the first record without a key, so
			// that the error handler commits the records before it and retries or recovers from
			// it; the records after it come back as duplicates.
			ConsumerRecord<?, ?> record = records.get(firstRejected);
			throw new BatchListenerFailedException("Record without idempotency key",
					new IdempotencyKeyMissingException(record.topic(), record.partition(), record.offset(),
							method.name()),
					firstRejected);
		}
		if (result == NOTHING_NEW) {
			IdempotentListenerInterceptor.acknowledge(method, arguments);
			return null;
		}
		return result;
	}

	private static void complete(List<Claim> claims, ListenerMethod method) {
		for (Claim claim : claims) {
			if (!claim.isNew()) {
				continue;
			}
			try {
				if (!claim.complete()) {
					logger.warn("A claim in a batch of " + method.name() + " was lost before completion (lease "
							+ "expired and taken over); its message may have been processed twice");
				}
			}
			catch (RuntimeException ex) {
				logger.warn("Could not complete a claim in a batch of " + method.name()
						+ " after its work committed: " + ex);
			}
		}
	}

	private @Nullable Object proceedWithNew(MethodInvocation invocation, ListenerMethod method, Object batch,
			List<ConsumerRecord<?, ?>> records, @Nullable List<?> payloads, List<Integer> candidates,
			List<Claim> claims, List<Integer> kept) {
		for (int i = 0; i < candidates.size(); i++) {
			if (claims.get(i).isNew()) {
				kept.add(candidates.get(i));
			}
		}
		if (kept.isEmpty()) {
			return NOTHING_NEW;
		}
		if (kept.size() < records.size()) {
			@Nullable Object[] arguments = invocation.getArguments().clone();
			arguments[method.batchIndex()] = filtered(method, batch, records, payloads, kept);
			((ProxyMethodInvocation) invocation).setArguments(arguments);
		}
		return IdempotentListenerInterceptor.proceed(invocation);
	}

	private List<Claim> claim(List<Integer> candidates, ProcessedMessage[] messages, ListenerMetrics metrics) {
		if (candidates.isEmpty()) {
			return List.of();
		}
		List<ProcessedMessage> toClaim = new ArrayList<>(candidates.size());
		for (int index : candidates) {
			toClaim.add(messages[index]);
		}
		long start = System.nanoTime();
		List<Claim> claims = this.store.claimAll(toClaim);
		metrics.claim(System.nanoTime() - start);
		return claims;
	}

	private List<Integer> notCached(String scope, ProcessedMessage[] messages, ListenerMetrics metrics) {
		List<Integer> keyed = new ArrayList<>(messages.length);
		for (int i = 0; i < messages.length; i++) {
			if (messages[i] != null) {
				keyed.add(i);
			}
		}
		if (this.cache == null || keyed.isEmpty()) {
			return keyed;
		}
		List<String> keys = new ArrayList<>(keyed.size());
		for (int index : keyed) {
			keys.add(messages[index].key());
		}
		boolean[] cached = this.cache.areProcessed(scope, keys);
		List<Integer> candidates = new ArrayList<>(keyed.size());
		for (int i = 0; i < cached.length; i++) {
			if (!cached[i]) {
				candidates.add(keyed.get(i));
			}
		}
		metrics.messages(Outcome.DUPLICATE, DecisionSource.CACHE, keyed.size() - candidates.size());
		return candidates;
	}

	private @Nullable String keyForMissing(ConsumerRecord<?, ?> record, ListenerMethod method) {
		if (this.missingKeyPolicy == MissingKeyPolicy.RECORD_COORDINATES) {
			return RecordCoordinates.keyOf(record);
		}
		logger.warn((this.missingKeyPolicy == MissingKeyPolicy.SKIP ? "Skipped" : "Rejected") + " record "
				+ record.topic() + "-" + record.partition() + "@" + record.offset()
				+ " without idempotency key in batch of " + method.name() + " (idempotency.missing-key="
				+ this.missingKeyPolicy.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-') + ")");
		return null;
	}

	private Throwable failed(List<Claim> claims, int candidates, ListenerMetrics metrics, Throwable ex) {
		for (Claim claim : claims) {
			if (claim.isNew()) {
				try {
					claim.release();
				}
				catch (RuntimeException releaseFailure) {
					ex.addSuppressed(releaseFailure);
				}
			}
		}
		metrics.messages(Outcome.FAILED, DecisionSource.STORE, candidates);
		return ex;
	}

	private static List<ConsumerRecord<?, ?>> records(ListenerMethod method, Object batch) {
		List<ConsumerRecord<?, ?>> records = new ArrayList<>();
		switch (method.batchKind()) {
			case RECORD_LIST -> ((List<?>) batch).forEach((record) -> records.add((ConsumerRecord<?, ?>) record));
			case CONSUMER_RECORDS -> ((ConsumerRecords<?, ?>) batch).forEach(records::add);
			default -> {
				ConsumerRecords<?, ?> bound = CurrentRecord.batch();
				if (bound != null) {
					bound.forEach(records::add);
				}
				if (records.size() != ((List<?>) batch).size()) {
					throw new IllegalStateException("The batch of " + method.name() + " has " + ((List<?>) batch).size()
							+ " payloads for " + records.size() + " records; take List<ConsumerRecord> instead");
				}
			}
		}
		return records;
	}

	@SuppressWarnings({ "unchecked", "rawtypes" })
	private static Object filtered(ListenerMethod method, Object batch, List<ConsumerRecord<?, ?>> records,
			@Nullable List<?> payloads, List<Integer> kept) {
		switch (method.batchKind()) {
			case CONSUMER_RECORDS -> {
				Map<TopicPartition, List<ConsumerRecord>> byPartition = new LinkedHashMap<>();
				for (int index : kept) {
					ConsumerRecord<?, ?> record = records.get(index);
					byPartition.computeIfAbsent(new TopicPartition(record.topic(), record.partition()),
							(partition) -> new ArrayList<>())
						.add(record);
				}
				return new ConsumerRecords(byPartition, ((ConsumerRecords<?, ?>) batch).nextOffsets());
			}
			case RECORD_LIST -> {
				List<Object> filtered = new ArrayList<>(kept.size());
				kept.forEach((index) -> filtered.add(records.get(index)));
				return filtered;
			}
			default -> {
				List<Object> filtered = new ArrayList<>(kept.size());
				kept.forEach((index) -> filtered.add(payloads.get(index)));
				return filtered;
			}
		}
	}

}
