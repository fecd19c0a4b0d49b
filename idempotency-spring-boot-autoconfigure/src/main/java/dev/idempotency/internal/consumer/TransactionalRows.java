package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.IdempotencyResultTooLargeException;
import dev.idempotency.Idempotent;
import dev.idempotency.StoredResultCodec;
import dev.idempotency.internal.key.Fingerprints;
import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.internal.store.JdbcClaimRows;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * Payload fingerprints and stored results of {@code @Idempotent} listeners in the
 * transactional mode: the claim stores the fingerprint, a duplicate claim reads the row
 * back in the same transaction, and the result is written to the row before the
 * transaction commits. A result larger than the limit fails the transaction with the
 * non-retryable {@link IdempotencyResultTooLargeException}, so that nothing commits.
 */
public final class TransactionalRows {

	private final JdbcClaimRows rows;

	private final LeaseSettings settings;

	private final @Nullable StoredResultCodec results;

	private final Map<Method, LeaseOptions> options = new ConcurrentHashMap<>();

	/**
	 * Create the fingerprints and stored results of the transactional mode.
	 * @param rows the statements on the store's table
	 * @param settings the fingerprint policy and the largest result
	 * @param results writes and reads stored results, or {@code null} when the
	 * application has no JSON mapper
	 */
	public TransactionalRows(JdbcClaimRows rows, LeaseSettings settings, @Nullable StoredResultCodec results) {
		this.rows = rows;
		this.settings = settings;
		this.results = results;
	}

	/**
	 * Return whether a listener fingerprints its payloads or stores its results, so that
	 * its duplicates must be read from the store, not skipped by a look-up of the key.
	 * @param idempotent the listener's annotation
	 * @return whether the claim must read the row
	 */
	static boolean readsRow(Idempotent idempotent) {
		return idempotent.fingerprint() || !idempotent.fingerprintExpression().isEmpty() || idempotent.storeResult();
	}

	LeaseSettings settings() {
		return this.settings;
	}

	LeaseOptions options(ListenerMethod method) {
		return this.options.computeIfAbsent(method.method(), (key) -> LeaseOptions.of(method, this.settings));
	}

	@Nullable String fingerprint(LeaseOptions options, ListenerMethod method, ConsumerRecord<?, ?> record,
			@Nullable Object[] arguments) {
		if (!options.fingerprint()) {
			return null;
		}
		StoredResultCodec codec = this.results;
		return Fingerprints.of(record, method.payload(arguments, record), options.fingerprintExpression(),
				(codec != null) ? (value) -> codec.write(value).getBytes(StandardCharsets.UTF_8) : null);
	}

	Claim claim(ProcessedMessage message, @Nullable String fingerprint) {
		return this.rows.claim(message, fingerprint);
	}

	JdbcClaimRows.@Nullable Row read(ProcessedMessage message) {
		return this.rows.read(message);
	}

	/**
	 * Store a listener's result with its claim, in the transaction of both.
	 * @throws IdempotencyResultTooLargeException if its JSON exceeds the limit
	 */
	void storeResult(ListenerMethod method, ProcessedMessage message, Object result) {
		String json = Objects.requireNonNull(this.results, "no StoredResultCodec").write(result);
		int size = json.getBytes(StandardCharsets.UTF_8).length;
		if (size > this.settings.maxResultSize()) {
			throw new IdempotencyResultTooLargeException("The result of " + method.name() + " for "
					+ RecordCoordinates.describe(message) + " (scope " + message.scope() + ") is " + size
					+ " bytes of JSON, more than idempotency.lease.max-result-size (" + this.settings.maxResultSize()
					+ " bytes); its work and its claim are rolled back, and the record is not retried. Return "
					+ "less, or raise the limit");
		}
		this.rows.storeResult(message, json);
	}

	/**
	 * Return the stored result of a duplicate, read as the method's return type.
	 * @return the result, or {@code null} if the listener stores none or none was stored
	 */
	@Nullable Object storedResult(LeaseOptions options, JdbcClaimRows.@Nullable Row row) {
		if (!options.storeResult() || row == null || row.result() == null) {
			return null;
		}
		return Objects.requireNonNull(this.results, "no StoredResultCodec").read(row.result(), options.resultType());
	}

}
