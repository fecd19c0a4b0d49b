package dev.idempotency.internal.consumer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The claims of a batch: the keys the cache does not know, claimed in one statement, and
 * the claims completed, released or given up once the batch's transaction ended.
 */
final class BatchClaims {

	// the batch path's decisions are logged as the BatchInvoker's, as they were before it was split
	private static final Log logger = LogFactory.getLog(BatchInvoker.class);

	private final ProcessedMessageStore store;

	private final @Nullable ProcessedKeyCache cache;

	BatchClaims(ProcessedMessageStore store, @Nullable ProcessedKeyCache cache) {
		this.store = store;
		this.cache = cache;
	}

	static void complete(List<Claim> claims, ListenerMethod method) {
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

	// A claim that stays is given up when its lease ends: it only delays the records a nack
	// handed back, so a failure here must not fail the batch, whose other records are applied.
	static void release(List<Claim> handedBack, ListenerMethod method) {
		for (Claim claim : handedBack) {
			try {
				claim.release();
			}
			catch (RuntimeException ex) {
				logger.warn("Could not release the claim of a record " + method.name() + " handed back with a nack; "
						+ "it is delivered again once the claim's lease ends: " + ex);
			}
		}
	}

	List<Claim> claim(List<Integer> candidates, ProcessedMessage[] messages, ListenerMetrics metrics) {
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

	List<Integer> notCached(ProcessedMessage[] messages, ListenerMetrics metrics) {
		List<Integer> keyed = new ArrayList<>(messages.length);
		for (int i = 0; i < messages.length; i++) {
			if (messages[i] != null) {
				keyed.add(i);
			}
		}
		if (this.cache == null || keyed.isEmpty()) {
			return keyed;
		}
		// one lookup per scope: records of a batch share one, unless some came through a
		// retry topic from another group
		Map<String, List<Integer>> byScope = new LinkedHashMap<>();
		for (int index : keyed) {
			byScope.computeIfAbsent(messages[index].scope(), (scope) -> new ArrayList<>()).add(index);
		}
		boolean[] cached = new boolean[messages.length];
		byScope.forEach((scope, indexes) -> {
			List<String> keys = new ArrayList<>(indexes.size());
			for (int index : indexes) {
				keys.add(messages[index].key());
			}
			boolean[] processed = this.cache.areProcessed(scope, keys);
			for (int i = 0; i < processed.length; i++) {
				cached[indexes.get(i)] = processed[i];
			}
		});
		List<Integer> candidates = new ArrayList<>(keyed.size());
		for (int index : keyed) {
			if (!cached[index]) {
				candidates.add(index);
			}
		}
		metrics.messages(Outcome.DUPLICATE, DecisionSource.CACHE, keyed.size() - candidates.size());
		return candidates;
	}

	Throwable failed(List<Claim> claims, int candidates, ListenerMetrics metrics, Throwable ex) {
		Claim.releaseNew(claims, ex);
		metrics.messages(Outcome.FAILED, DecisionSource.STORE, candidates);
		return ex;
	}

}
