package dev.idempotency.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

import dev.idempotency.FingerprintMismatchPolicy;

import dev.idempotency.MissingKeyPolicy;
import dev.idempotency.internal.store.TableName;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.ConstructorBinding;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Configuration of {@code @Idempotent} Kafka listeners.
 *
 * @param enabled Whether to make @Idempotent listener methods idempotent. When
 * off, the annotation has no effect.
 * @param keyHeader Name of the record header that carries the idempotency key, used when
 * the annotation gives no key expression.
 * @param missingKey What to do with a record that has no idempotency key: use its
 * coordinates (topic-partition-offset) as key, reject it with an exception, or skip it.
 * @param lockTimeout Maximum time a claim waits for a concurrent claim of the same key
 * (another consumer processing the same message) before failing; 0 waits without bound.
 * It bounds the claim statement only.
 * @param transactionManager Name of the PlatformTransactionManager bean that runs the
 * claim and the listener method. By default the unique (or primary) one, else the bean
 * named "transactionManager".
 * @param advisorOrder Order of the interceptor around @Idempotent methods. The default
 * runs it outside @Transactional on the same method.
 * @param store The processed-message store.
 * @param flyway The schema migrations run by the starter.
 * @param cache The Redis cache of processed keys in front of the JDBC store.
 * @param outbox The transactional outbox and its relay.
 * @param infrastructureRetry Retries of records that failed because the database, Redis
 * or a key held by another consumer was not available.
 * @param lease The lease mode of @Idempotent(mode = LEASE) listeners.
 */
@ConfigurationProperties("idempotency")
public record IdempotencyProperties(@DefaultValue("true") boolean enabled,
		@DefaultValue("X-Idempotency-Key") String keyHeader,
		@DefaultValue("record-coordinates") MissingKeyPolicy missingKey, @DefaultValue("5s") Duration lockTimeout,
		@Nullable String transactionManager, @DefaultValue(DEFAULT_ADVISOR_ORDER) int advisorOrder,
		@DefaultValue Store store, @DefaultValue Flyway flyway, @DefaultValue Cache cache,
		@DefaultValue Outbox outbox, @DefaultValue InfrastructureRetry infrastructureRetry,
		@DefaultValue Lease lease) {

	/**
	 * Default order of the advisor: just outside the transaction advisor, which has the
	 * lowest precedence.
	 */
	static final String DEFAULT_ADVISOR_ORDER = "2147483547";

	public IdempotencyProperties {
		if (keyHeader.isBlank()) {
			throw new IllegalArgumentException("idempotency.key-header must not be blank");
		}
		if (lockTimeout.isNegative()) {
			throw new IllegalArgumentException("idempotency.lock-timeout must not be negative, was " + lockTimeout);
		}
	}

	/**
	 * Return the validated outbox table name, in the schema of the processed-messages
	 * table.
	 * @return the outbox table
	 */
	TableName outboxTableName() {
		return new TableName(this.store.jdbc().schema(), this.outbox.table());
	}

	/**
	 * Retries of records whose listener failed because the infrastructure was not there:
	 * the database or Redis unreachable or restarting, a lock or statement timeout, a key
	 * held by another consumer. Such records are retried with an exponential back-off and
	 * never handed to the application's error handler, so an outage delays records and
	 * never drops them; every other failure keeps the application's own error handling.
	 *
	 * @param enabled Whether to retry records failed by the infrastructure without end, in
	 * front of the error handler of every Kafka listener container.
	 * @param initialInterval Delay before the first retry.
	 * @param multiplier Factor between consecutive delays.
	 * @param maxInterval Longest delay between retries. Must stay below the consumer's
	 * max.poll.interval.ms.
	 */
	public record InfrastructureRetry(@DefaultValue("true") boolean enabled,
			@DefaultValue("1s") Duration initialInterval, @DefaultValue("2.0") double multiplier,
			@DefaultValue("30s") Duration maxInterval) {

		public InfrastructureRetry {
			requirePositive(initialInterval, "idempotency.infrastructure-retry.initial-interval");
			requirePositive(maxInterval, "idempotency.infrastructure-retry.max-interval");
			if (multiplier < 1.0) {
				throw new IllegalArgumentException(
						"idempotency.infrastructure-retry.multiplier must be at least 1, was " + multiplier);
			}
		}

	}

	/**
	 * The lease mode of {@code @Idempotent(mode = LEASE)} listeners, whose effects are
	 * outside the database: the claim commits alone with a lease and a fencing token.
	 *
	 * @param duration How long a claim holds its key before another consumer may take it
	 * over, unless the annotation sets a lease. Counted on the database's clock. Must
	 * exceed the longest listener invocation.
	 * @param nonRetryable Exception types (with their subtypes) that mark a claim FAILED
	 * instead of releasing it, so that the record goes to the error handler's recoverer and
	 * is never processed again; added to each annotation's nonRetryable.
	 * @param fingerprintMismatch What to do with a record whose key was claimed for a
	 * payload with another fingerprint: "reject" it with a non-retryable exception (to the
	 * recoverer, such as a dead-letter topic), or "warn", count and skip it. Applies to
	 * fingerprinting listeners of both modes.
	 * @param maxResultSize Largest stored result (the JSON of a storeResult method's return
	 * value), in both modes. A larger one fails the record with a non-retryable exception:
	 * in lease mode after completing the claim without the result, in the transactional
	 * mode by rolling back the claim and the listener's work.
	 */
	public record Lease(@DefaultValue("1m") Duration duration,
			@DefaultValue List<Class<? extends Throwable>> nonRetryable,
			@DefaultValue("reject") FingerprintMismatchPolicy fingerprintMismatch,
			@DefaultValue("64KB") DataSize maxResultSize) {

		public Lease {
			requirePositive(duration, "idempotency.lease.duration");
			if (maxResultSize.toBytes() < 1) {
				throw new IllegalArgumentException(
						"idempotency.lease.max-result-size must be positive, was " + maxResultSize);
			}
		}

	}

	/**
	 * The processed-message store.
	 *
	 * @param type Where processed keys are recorded: "jdbc" (PostgreSQL, in the listener's
	 * transaction) or "redis" (Redis alone, with leases; weaker guarantees).
	 * @param jdbc The JDBC (PostgreSQL) store.
	 * @param redis The Redis-only store.
	 */
	public record Store(@DefaultValue("jdbc") StoreType type, @DefaultValue Jdbc jdbc, @DefaultValue Redis redis) {
	}

	/**
	 * Kinds of processed-message store.
	 */
	public enum StoreType {

		/**
		 * PostgreSQL through JDBC: claims commit with the listener's work.
		 */
		JDBC,

		/**
		 * Redis alone: atomic claims with owner tokens and leases.
		 */
		REDIS

	}

	/**
	 * The Redis-only processed-message store.
	 *
	 * @param keyPrefix Prefix of the Redis keys the store writes. Where the cache is in
	 * use, neither this prefix nor idempotency.cache.key-prefix may start with the other,
	 * so that the cache never reads a claim in progress as a processed key.
	 * @param lease How long a claim holds a key before another consumer may take it over.
	 * Must exceed the longest listener invocation.
	 * @param ttl How long a completed key is remembered.
	 */
	public record Redis(@DefaultValue("idempotency:store:") String keyPrefix, @DefaultValue("1m") Duration lease,
			@DefaultValue("7d") Duration ttl) {

		public Redis {
			requirePositive(lease, "idempotency.store.redis.lease");
			requirePositive(ttl, "idempotency.store.redis.ttl");
		}

	}

	/**
	 * The Redis cache of processed keys in front of the JDBC store.
	 *
	 * @param enabled Whether to look keys up in Redis before the database and write them
	 * there after each commit, when the application has a Lettuce Redis connection.
	 * @param keyPrefix Prefix of the Redis keys the cache writes. Neither this prefix nor
	 * idempotency.store.redis.key-prefix may start with the other.
	 * @param ttl How long a processed key stays in the cache. Should not exceed the
	 * database retention.
	 * @param timeout Maximum time a lookup may take; a slower answer counts as a miss.
	 * @param failureThreshold Number of consecutive failures after which the cache is not
	 * asked for a while.
	 * @param openFor How long the cache is not asked after repeated failures, before one
	 * lookup probes it again.
	 */
	public record Cache(@DefaultValue("true") boolean enabled, @DefaultValue("idempotency:cache:") String keyPrefix,
			@DefaultValue("24h") Duration ttl, @DefaultValue("50ms") Duration timeout,
			@DefaultValue("5") int failureThreshold, @DefaultValue("10s") Duration openFor) {

		public Cache {
			requirePositive(ttl, "idempotency.cache.ttl");
			requirePositive(timeout, "idempotency.cache.timeout");
			requirePositive(openFor, "idempotency.cache.open-for");
			if (failureThreshold < 1) {
				throw new IllegalArgumentException(
						"idempotency.cache.failure-threshold must be at least 1, was " + failureThreshold);
			}
		}

	}

	/**
	 * The transactional outbox and its relay.
	 *
	 * @param enabled Whether to provide the Outbox bean and run the relay, when the
	 * application has a DataSource and spring-kafka.
	 * @param table Name of the outbox table, in the schema of the processed-messages table.
	 * At most 50 characters: its indexes and the relay's claims table are named after it,
	 * within PostgreSQL's limit of 63 bytes for identifiers.
	 * @param relayEnabled Whether this instance runs a relay. Switch off on instances that
	 * only write events.
	 * @param batchSize Maximum number of events claimed and sent per relay cycle.
	 * @param pollInterval How long the relay waits for new events when it found fewer than
	 * a batch. A commit on this instance wakes it at once.
	 * @param lease How long a claimed batch belongs to one relay instance. After that,
	 * another instance may publish the events again (consumers deduplicate by event id).
	 * @param sendTimeout How long the relay waits for the broker's acknowledgments of a
	 * batch.
	 * @param maxAttempts Number of attempts after which an event is DEAD.
	 * @param initialBackoff Delay after the first failed attempt.
	 * @param backoffMultiplier Factor between consecutive delays.
	 * @param maxBackoff Longest delay between attempts.
	 * @param jitter Fraction of each delay that is randomized, from 0 to 1.
	 * @param completion What happens to a sent event: "delete" it, or "mark" it SENT and
	 * purge it after the retention.
	 * @param retention How long events marked SENT are kept.
	 * @param shutdownTimeout How long stopping waits for the batch in flight.
	 * @param claimAhead Whether the relay claims the next batch while a full batch is
	 * being sent, hiding the claim's time. Pays with one relay instance, or with many more
	 * keys than instances times the batch size; with few keys, the instance that claims
	 * ahead holds most of them and the other instances find little to claim.
	 * @param derivedEventIds Whether an event published while an @Idempotent listener or
	 * HTTP handler runs gets an id derived from the key being handled (and the event's
	 * topic and position), so that running the handling again publishes the same ids and
	 * consumers skip them. When false, every event gets a random id.
	 * @param replication The relay that reads committed events from PostgreSQL's logical
	 * replication stream instead of polling the table.
	 */
	public record Outbox(@DefaultValue("true") boolean enabled, @DefaultValue("outbox") String table,
			@DefaultValue("true") boolean relayEnabled, @DefaultValue("true") boolean autoStartup,
			@DefaultValue("500") int batchSize, @DefaultValue("500ms") Duration pollInterval,
			@DefaultValue("5s") Duration idlePollInterval, @DefaultValue("2m") Duration lease,
			@DefaultValue("30s") Duration sendTimeout, @DefaultValue("10") int maxAttempts,
			@DefaultValue("1s") Duration initialBackoff, @DefaultValue("2.0") double backoffMultiplier,
			@DefaultValue("5m") Duration maxBackoff, @DefaultValue("0.2") double jitter,
			@DefaultValue("delete") Completion completion, @DefaultValue("7d") Duration retention,
			@DefaultValue("10s") Duration shutdownTimeout, @DefaultValue("false") boolean claimAhead,
			@DefaultValue("true") boolean derivedEventIds, @DefaultValue Replication replication) {

		@ConstructorBinding
		public Outbox {
			TableName.requireIdentifier(table, "idempotency.outbox.table");
			// the longest of the names derived from it: _claims, _pending_idx, _sent_idx, _dead_idx
			requireRoomForSuffix("idempotency.outbox.table", table, "_blocking_idx");
			if (batchSize < 1) {
				throw new IllegalArgumentException(
						"idempotency.outbox.batch-size must be at least 1, was " + batchSize);
			}
			if (maxAttempts < 1) {
				throw new IllegalArgumentException(
						"idempotency.outbox.max-attempts must be at least 1, was " + maxAttempts);
			}
			if (backoffMultiplier < 1) {
				throw new IllegalArgumentException(
						"idempotency.outbox.backoff-multiplier must be at least 1, was " + backoffMultiplier);
			}
			if (jitter < 0 || jitter > 1) {
				throw new IllegalArgumentException("idempotency.outbox.jitter must be between 0 and 1, was " + jitter);
			}
			requirePositive(pollInterval, "idempotency.outbox.poll-interval");
			if (idlePollInterval.compareTo(pollInterval) < 0) {
				throw new IllegalArgumentException("idempotency.outbox.idle-poll-interval (" + idlePollInterval
						+ ") must be at least idempotency.outbox.poll-interval (" + pollInterval + ")");
			}
			requirePositive(lease, "idempotency.outbox.lease");
			requirePositive(sendTimeout, "idempotency.outbox.send-timeout");
			requirePositive(initialBackoff, "idempotency.outbox.initial-backoff");
			requirePositive(maxBackoff, "idempotency.outbox.max-backoff");
			requirePositive(retention, "idempotency.outbox.retention");
			if (shutdownTimeout.isNegative()) {
				throw new IllegalArgumentException(
						"idempotency.outbox.shutdown-timeout must not be negative, was " + shutdownTimeout);
			}
			if (lease.compareTo(sendTimeout.multipliedBy(2)) < 0) {
				throw new IllegalArgumentException("idempotency.outbox.lease (" + lease + ") must be at least twice "
						+ "idempotency.outbox.send-timeout (" + sendTimeout + "), so that a batch in flight keeps its "
						+ "lease until its acknowledgments are in");
			}
		}

		/**
		 * Create the outbox settings of earlier versions, with the table relay.
		 */
		public Outbox(boolean enabled, String table, boolean relayEnabled, boolean autoStartup, int batchSize,
				Duration pollInterval, Duration idlePollInterval, Duration lease, Duration sendTimeout, int maxAttempts,
				Duration initialBackoff, double backoffMultiplier, Duration maxBackoff, double jitter,
				Completion completion, Duration retention, Duration shutdownTimeout, boolean claimAhead,
				boolean derivedEventIds) {
			this(enabled, table, relayEnabled, autoStartup, batchSize, pollInterval, idlePollInterval, lease,
					sendTimeout, maxAttempts, initialBackoff, backoffMultiplier, maxBackoff, jitter, completion,
					retention, shutdownTimeout, claimAhead, derivedEventIds, Replication.DISABLED);
		}

		/**
		 * Return the name of the replication relay's slot: the configured one, or one
		 * named after the table.
		 * @return the slot name
		 */
		public String replicationSlotName() {
			return (this.replication.slotName() != null) ? this.replication.slotName()
					: this.table.toLowerCase(Locale.ROOT) + "_slot";
		}

		/**
		 * Return the name of the publication of the outbox table's inserts: the configured
		 * one, or one named after the table.
		 * @return the publication name
		 */
		public String replicationPublicationName() {
			return (this.replication.publicationName() != null) ? this.replication.publicationName()
					: this.table.toLowerCase(Locale.ROOT) + "_publication";
		}

		/**
		 * Create the outbox settings of earlier versions, with event ids derived from the
		 * key being handled.
		 */
		public Outbox(boolean enabled, String table, boolean relayEnabled, boolean autoStartup, int batchSize,
				Duration pollInterval, Duration idlePollInterval, Duration lease, Duration sendTimeout, int maxAttempts,
				Duration initialBackoff, double backoffMultiplier, Duration maxBackoff, double jitter,
				Completion completion, Duration retention, Duration shutdownTimeout, boolean claimAhead) {
			this(enabled, table, relayEnabled, autoStartup, batchSize, pollInterval, idlePollInterval, lease,
					sendTimeout, maxAttempts, initialBackoff, backoffMultiplier, maxBackoff, jitter, completion,
					retention, shutdownTimeout, claimAhead, true);
		}

		/**
		 * Create the outbox settings of earlier versions, without claiming ahead.
		 */
		public Outbox(boolean enabled, String table, boolean relayEnabled, boolean autoStartup, int batchSize,
				Duration pollInterval, Duration idlePollInterval, Duration lease, Duration sendTimeout, int maxAttempts,
				Duration initialBackoff, double backoffMultiplier, Duration maxBackoff, double jitter,
				Completion completion, Duration retention, Duration shutdownTimeout) {
			this(enabled, table, relayEnabled, autoStartup, batchSize, pollInterval, idlePollInterval, lease,
					sendTimeout, maxAttempts, initialBackoff, backoffMultiplier, maxBackoff, jitter, completion,
					retention, shutdownTimeout, false);
		}

		/**
		 * Create the outbox settings of earlier versions: the relay starts with the
		 * application and polls an empty outbox at most every 5 seconds.
		 */
		public Outbox(boolean enabled, String table, boolean relayEnabled, int batchSize, Duration pollInterval,
				Duration lease, Duration sendTimeout, int maxAttempts, Duration initialBackoff, double backoffMultiplier,
				Duration maxBackoff, double jitter, Completion completion, Duration retention, Duration shutdownTimeout) {
			this(enabled, table, relayEnabled, true, batchSize, pollInterval, max(pollInterval, Duration.ofSeconds(5)),
					lease, sendTimeout, maxAttempts, initialBackoff, backoffMultiplier, maxBackoff, jitter, completion,
					retention, shutdownTimeout);
		}

		private static Duration max(Duration a, Duration b) {
			return (a.compareTo(b) >= 0) ? a : b;
		}

	}

	/**
	 * The outbox relay that reads committed events from PostgreSQL's logical replication
	 * stream (pgoutput) instead of polling the table. Needs wal_level = logical and a role
	 * with the REPLICATION attribute.
	 *
	 * @param enabled Whether the relay reads the replication stream instead of polling the
	 * outbox table. Switch it on for every instance of the application.
	 * @param slotName Name of the logical replication slot. By default the outbox table's
	 * name followed by "_slot".
	 * @param publicationName Name of the publication of the outbox table's inserts. By
	 * default the outbox table's name followed by "_publication".
	 * @param createSlot Whether the relay creates the publication and the slot when they
	 * are missing. When false, they must exist before the relay starts.
	 * @param standbyRetryInterval How often an instance that does not stream the slot
	 * tries to take it over. One instance streams it at a time.
	 * @param statusInterval How often the relay reports its position to the server while
	 * it streams.
	 * @param url JDBC URL of the replication connection. By default the URL of the
	 * application's DataSource.
	 * @param username User of the replication connection, a role with REPLICATION. By
	 * default the DataSource's.
	 * @param password Password of the replication connection. By default the DataSource's.
	 */
	public record Replication(@DefaultValue("false") boolean enabled, @Nullable String slotName,
			@Nullable String publicationName, @DefaultValue("true") boolean createSlot,
			@DefaultValue("1s") Duration standbyRetryInterval, @DefaultValue("1s") Duration statusInterval,
			@Nullable String url, @Nullable String username, @Nullable String password) {

		static final Replication DISABLED = new Replication(false, null, null, true, Duration.ofSeconds(1),
				Duration.ofSeconds(1), null, null, null);

		public Replication {
			if (slotName != null && !SLOT_NAME.matcher(slotName).matches()) {
				throw new IllegalArgumentException("Invalid idempotency.outbox.replication.slot-name '" + slotName
						+ "': expected lower-case letters, digits and underscores, at most 63 characters");
			}
			if (publicationName != null) {
				TableName.requireIdentifier(publicationName, "idempotency.outbox.replication.publication-name");
			}
			requirePositive(standbyRetryInterval, "idempotency.outbox.replication.standby-retry-interval");
			requirePositive(statusInterval, "idempotency.outbox.replication.status-interval");
		}

		@Override
		public String toString() {
			return "Replication[enabled=" + this.enabled + ", slotName=" + this.slotName + ", publicationName="
					+ this.publicationName + ", url=" + this.url + ", username=" + this.username + "]";
		}

	}

	private static final Pattern SLOT_NAME = Pattern.compile("[a-z0-9_]{1,63}");

	/**
	 * What happens to an outbox event once the broker acknowledged it.
	 */
	public enum Completion {

		/** Delete the row. */
		DELETE,

		/** Mark the row SENT and purge it after the retention. */
		MARK

	}

	// PostgreSQL's limit for identifiers, in bytes (one per character of a plain one)
	private static final int MAX_IDENTIFIER_LENGTH = 63;

	/**
	 * Refuse a table name too long for the names the migrations derive from it: PostgreSQL
	 * truncates a longer identifier with only a notice, and two truncated names can be the
	 * same ({@code CREATE ... IF NOT EXISTS} then skips the second, and the starter would
	 * use an index where it expects a sequence, or a table of another name).
	 */
	private static void requireRoomForSuffix(String property, String table, String longestSuffix) {
		if (table.length() + longestSuffix.length() > MAX_IDENTIFIER_LENGTH) {
			throw new IllegalArgumentException("Invalid " + property + " name '" + table + "': at most "
					+ (MAX_IDENTIFIER_LENGTH - longestSuffix.length()) + " characters, so that the names derived "
					+ "from it, such as '" + table + longestSuffix + "', stay within PostgreSQL's limit of "
					+ MAX_IDENTIFIER_LENGTH + " bytes for identifiers");
		}
	}

	private static void requirePositive(Duration duration, String property) {
		if (duration.isZero() || duration.isNegative()) {
			throw new IllegalArgumentException(property + " must be positive, was " + duration);
		}
	}

	/**
	 * The JDBC (PostgreSQL) processed-message store.
	 *
	 * @param schema Schema of the processed-messages table. By default the connection's
	 * current schema.
	 * @param table Name of the processed-messages table. At most 46 characters: its index
	 * and its fencing-token sequence are named after it, within PostgreSQL's limit of 63
	 * bytes for identifiers.
	 * @param retention How long processed keys are kept. A message redelivered after its
	 * key was deleted is processed again, so keep keys longer than any redelivery or
	 * replay can come.
	 * @param cleanupInterval How often keys older than the retention are deleted; 0 never
	 * deletes them.
	 * @param pollLookup Whether record listeners without the Redis cache look up the keys
	 * of each poll in one statement, so that duplicates are skipped without a transaction.
	 */
	public record Jdbc(@Nullable String schema, @DefaultValue("processed_messages") String table,
			@DefaultValue("7d") Duration retention, @DefaultValue("1h") Duration cleanupInterval,
			@DefaultValue("true") boolean pollLookup) {

		@ConstructorBinding
		public Jdbc {
			if (schema != null && !schema.isEmpty()) {
				TableName.requireIdentifier(schema, "idempotency.store.jdbc.schema");
			}
			TableName.requireIdentifier(table, "idempotency.store.jdbc.table");
			// the longest of the names derived from it: _fencing_seq
			requireRoomForSuffix("idempotency.store.jdbc.table", table, "_processed_at_idx");
			requirePositive(retention, "idempotency.store.jdbc.retention");
			if (cleanupInterval.isNegative()) {
				throw new IllegalArgumentException(
						"idempotency.store.jdbc.cleanup-interval must not be negative, was " + cleanupInterval);
			}
		}

		/**
		 * Create the store settings of earlier versions, with the poll lookup on.
		 */
		public Jdbc(@Nullable String schema, String table, Duration retention, Duration cleanupInterval) {
			this(schema, table, retention, cleanupInterval, true);
		}

		/**
		 * Return the validated, schema-qualified table name.
		 * @return the table name
		 */
		TableName tableName() {
			return new TableName(this.schema, this.table);
		}

	}

	/**
	 * The starter's own Flyway migrations of its tables.
	 *
	 * @param enabled Whether to migrate the starter's tables at start-up. Switch off when
	 * the schema is managed otherwise; the SQL is in
	 * db/idempotency/postgresql/ of the autoconfigure jar.
	 * @param table Name of the starter's schema history table, kept apart from the
	 * application's own.
	 */
	public record Flyway(@DefaultValue("true") boolean enabled,
			@DefaultValue("idempotency_schema_history") String table) {

		public Flyway {
			TableName.requireIdentifier(table, "idempotency.flyway.table");
		}

	}

}
