package dev.idempotency.internal.consumer;

import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.InboundMessage;
import dev.idempotency.MissingKeyPolicy;
import dev.idempotency.internal.key.StoredKey;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.ProcessedMessage;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * The first step of a record's plan: its key, resolved by the application's
 * {@link IdempotencyKeyResolver}, fitted to the store and scoped; a record without key
 * is given its coordinates, skipped or rejected, as {@code idempotency.missing-key} says.
 */
final class RecordKeys {

	private final IdempotencyKeyResolver resolver;

	private final MissingKeys missingKeys;

	RecordKeys(IdempotencyKeyResolver resolver, MissingKeyPolicy missingKeyPolicy) {
		this.resolver = resolver;
		this.missingKeys = new MissingKeys(missingKeyPolicy);
	}

	MissingKeys missingKeys() {
		return this.missingKeys;
	}

	/**
	 * Return the record's claim, or {@code null} when the record has no key and was
	 * skipped (counted, and acknowledged for a listener that would have).
	 * @throws dev.idempotency.IdempotencyKeyMissingException when the policy rejects it
	 */
	@Nullable ProcessedMessage message(ListenerMethod method, ListenerMetrics metrics, ConsumerRecord<?, ?> record,
			@Nullable Object[] arguments) {
		String key = this.resolver
			.resolve(new InboundMessage(record, method.payload(arguments, record), method.method(), method.idempotent()));
		if (key == null || key.isBlank()) {
			key = this.missingKeys.keyFor(record, method);
			if (key == null) {
				metrics.message(Outcome.REJECTED, DecisionSource.NONE);
				if (this.missingKeys.rejects()) {
					throw this.missingKeys.rejection(record, method);
				}
				method.acknowledgeSkipped(arguments);
				return null;
			}
		}
		return new ProcessedMessage(method.scope(record), StoredKey.of(key), record.topic(), record.partition(),
				record.offset());
	}

	/**
	 * Return the record's claim as the record alone gives it, before the listener is
	 * invoked: its key resolved with the record value as the payload. Only for a listener
	 * whose key does not depend on the payload's conversion.
	 * @return the claim, or {@code null} when the record has no key or its resolution
	 * failed (the invocation resolves it again, and decides)
	 */
	@Nullable ProcessedMessage beforeInvocation(ListenerMethod method, ConsumerRecord<?, ?> record) {
		String key;
		try {
			key = this.resolver
				.resolve(new InboundMessage(record, record.value(), method.method(), method.idempotent()));
		}
		catch (RuntimeException ex) {
			return null;
		}
		if (key == null || key.isBlank()) {
			return null;
		}
		return new ProcessedMessage(method.scope(record), StoredKey.of(key), record.topic(), record.partition(),
				record.offset());
	}

}
