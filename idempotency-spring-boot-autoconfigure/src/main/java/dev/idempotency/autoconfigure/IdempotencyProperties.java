package dev.idempotency.autoconfigure;

import java.time.Duration;

import dev.idempotency.key.MissingKeyPolicy;
import dev.idempotency.store.TableName;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

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
 * It applies to the whole listener transaction.
 * @param transactionManager Name of the PlatformTransactionManager bean that runs the
 * claim and the listener method. By default the unique (or primary) one, else the bean
 * named "transactionManager".
 * @param advisorOrder Order of the interceptor around @Idempotent methods. The default
 * runs it outside @Transactional on the same method.
 * @param store The processed-message store.
 * @param flyway The schema migrations run by the starter.
 */
@ConfigurationProperties("idempotency")
public record IdempotencyProperties(@DefaultValue("true") boolean enabled,
		@DefaultValue("X-Idempotency-Key") String keyHeader,
		@DefaultValue("record-coordinates") MissingKeyPolicy missingKey, @DefaultValue("5s") Duration lockTimeout,
		@Nullable String transactionManager, @DefaultValue(DEFAULT_ADVISOR_ORDER) int advisorOrder,
		@DefaultValue Store store, @DefaultValue Flyway flyway) {

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
	 * The processed-message store.
	 *
	 * @param jdbc The JDBC (PostgreSQL) store.
	 */
	public record Store(@DefaultValue Jdbc jdbc) {
	}

	/**
	 * The JDBC (PostgreSQL) processed-message store.
	 *
	 * @param schema Schema of the processed-messages table. By default the connection's
	 * current schema.
	 * @param table Name of the processed-messages table.
	 */
	public record Jdbc(@Nullable String schema, @DefaultValue("processed_messages") String table) {

		public Jdbc {
			new TableName(schema, table);
		}

		/**
		 * Return the validated, schema-qualified table name.
		 * @return the table name
		 */
		public TableName tableName() {
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
