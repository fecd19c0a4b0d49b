package dev.idempotency.metrics;

/**
 * The meters this library records, with their tags. Tags are low-cardinality: never a
 * key, an offset or a payload value.
 */
public enum IdempotencyMeters {

	/**
	 * Counter of messages seen by {@code @Idempotent} listeners, by decision. Tags:
	 * {@code listener}; {@code outcome} = {@code processed}, {@code duplicate},
	 * {@code failed}, {@code rejected} (no key, policy {@code reject} or {@code skip});
	 * {@code source} = {@code cache}, {@code store}, {@code none} (where the decision came
	 * from).
	 */
	MESSAGES("idempotency.messages"),

	/**
	 * Timer of the claim of a key in the store (the statement, without the listener's
	 * work), with percentile histogram buckets from 100 µs to 10 s. Tags:
	 * {@code listener}, {@code store}. Registered, with the five decision counters of
	 * {@link #MESSAGES}, when the listener receives its first record.
	 */
	CLAIM("idempotency.claim"),

	/**
	 * Counter of {@code @Idempotent(mode = LEASE)} invocations that finished their work but
	 * found their claim taken over (their lease expired and another consumer claimed the
	 * key): nothing was marked and the application's {@code LeaseLostHandler} beans were
	 * called. Tag: {@code listener}. Registered with the first lost lease.
	 */
	LEASE_LOST("idempotency.lease.lost"),

	/**
	 * Counter of records whose key was claimed for a payload with another fingerprint.
	 * Tags: {@code listener}; {@code policy} = {@code reject} (sent to the error handler's
	 * recoverer) or {@code warn} (skipped). Registered with the first mismatch.
	 */
	FINGERPRINT_MISMATCHES("idempotency.fingerprint.mismatches"),

	/**
	 * Counter of lookups in the cache of processed keys. Tag {@code result} = {@code hit},
	 * {@code miss}, {@code error} (a failure, a timeout, or the breaker open: the cache gave
	 * no answer and the store decided).
	 */
	CACHE_REQUESTS("idempotency.cache.requests"),

	/**
	 * Gauge: 1 while the cache breaker is open after repeated failures (the cache is not
	 * asked), 0 otherwise.
	 */
	CACHE_BREAKER_OPEN("idempotency.cache.breaker.open"),

	/**
	 * Counter of processed keys deleted from the JDBC store after their retention.
	 */
	CLEANUP_DELETED("idempotency.cleanup.deleted"),

	/**
	 * Counter of outbox events acknowledged by the broker. Tag: {@code topic}.
	 */
	OUTBOX_PUBLISHED("idempotency.outbox.published"),

	/**
	 * Counter of failed attempts to publish outbox events. Tags: {@code topic},
	 * {@code exception} (simple class name).
	 */
	OUTBOX_FAILURES("idempotency.outbox.failures"),

	/**
	 * Gauge of outbox events waiting to be published (refreshed every 10 seconds), counted
	 * up to 10,000: a larger backlog reads 10,001, so that counting it costs the same
	 * whatever its size.
	 */
	OUTBOX_PENDING("idempotency.outbox.pending"),

	/**
	 * Gauge of dead outbox events (refreshed every 10 seconds and when an event dies),
	 * counted up to 10,000: more read 10,001.
	 */
	OUTBOX_DEAD("idempotency.outbox.dead"),

	/**
	 * Time gauge: age of the oldest pending outbox event (0 when none), measured on the
	 * database clock and read by the relay after every cycle, so at most one cycle (one
	 * poll interval when idle) behind.
	 */
	OUTBOX_OLDEST_AGE("idempotency.outbox.oldest.age"),

	/**
	 * Timer with histogram: from an event's insert in the outbox (in the committing
	 * transaction) to the broker's acknowledgment. Tag: {@code topic}.
	 */
	OUTBOX_LATENCY("idempotency.outbox.latency"),

	/**
	 * Gauge, in bytes, of the replication relay's slot: the WAL between the server's
	 * current position and the position the relay confirmed (refreshed every 10 seconds;
	 * only with the replication relay).
	 */
	OUTBOX_REPLICATION_LAG("idempotency.outbox.replication.lag");

	private final String meterName;

	IdempotencyMeters(String meterName) {
		this.meterName = meterName;
	}

	/**
	 * Return the Micrometer name of the meter.
	 * @return the name
	 */
	public String meterName() {
		return this.meterName;
	}

}
