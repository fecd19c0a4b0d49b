package dev.idempotency.autoconfigure;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Invalid property values stop the application at start-up with a message that names the
 * property: negative durations, unknown enum values and table names that are not plain
 * SQL identifiers (or whose companion tables' names would be too long).
 */
class BadConfigurationTests {

	private final ApplicationContextRunner runner = AutoConfigurationRunners
		.onTheTestServers(IdempotencyAutoConfiguration.class, IdempotencySchemaAutoConfiguration.class,
				IdempotencyJdbcStoreAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class)
		.withPropertyValues("idempotency.outbox.relay-enabled=false");

	@ParameterizedTest(name = "{0}={1}")
	@CsvSource(delimiter = '|', textBlock = """
			idempotency.lock-timeout                         | -1s   | idempotency.lock-timeout must not be negative
			idempotency.store.jdbc.retention                 | -7d   | idempotency.store.jdbc.retention must be positive
			idempotency.store.jdbc.cleanup-interval          | -1h   | idempotency.store.jdbc.cleanup-interval must not be negative
			idempotency.store.redis.lease                    | -1m   | idempotency.store.redis.lease must be positive
			idempotency.store.redis.ttl                      | -1d   | idempotency.store.redis.ttl must be positive
			idempotency.cache.ttl                            | -24h  | idempotency.cache.ttl must be positive
			idempotency.cache.timeout                        | -50ms | idempotency.cache.timeout must be positive
			idempotency.cache.open-for                       | -10s  | idempotency.cache.open-for must be positive
			idempotency.infrastructure-retry.initial-interval | -1s  | idempotency.infrastructure-retry.initial-interval must be positive
			idempotency.infrastructure-retry.max-interval    | -30s  | idempotency.infrastructure-retry.max-interval must be positive
			idempotency.outbox.poll-interval                 | -1s   | idempotency.outbox.poll-interval must be positive
			idempotency.outbox.lease                         | -2m   | idempotency.outbox.lease must be positive
			idempotency.outbox.send-timeout                  | -30s  | idempotency.outbox.send-timeout must be positive
			idempotency.outbox.initial-backoff               | -1s   | idempotency.outbox.initial-backoff must be positive
			idempotency.outbox.max-backoff                   | -5m   | idempotency.outbox.max-backoff must be positive
			idempotency.outbox.retention                     | -7d   | idempotency.outbox.retention must be positive
			idempotency.outbox.shutdown-timeout              | -10s  | idempotency.outbox.shutdown-timeout must not be negative
			""")
	void failsFastOnANegativeDuration(String property, String value, String message) {
		assertFailsNaming(property + "=" + value, message);
	}

	@ParameterizedTest(name = "{0}={1}")
	@CsvSource(delimiter = '|', textBlock = """
			idempotency.missing-key       | drop    | idempotency.missing-key
			idempotency.store.type        | mongodb | idempotency.store.type
			idempotency.outbox.completion | archive | idempotency.outbox.completion
			""")
	void failsFastOnAnUnknownEnumValue(String property, String value, String message) {
		assertFailsNaming(property + "=" + value, message);
	}

	@ParameterizedTest(name = "{0}={1}")
	@CsvSource(delimiter = '|', textBlock = """
			idempotency.store.jdbc.table  | keys; DROP TABLE accounts | Invalid table name 'keys; DROP TABLE accounts'
			idempotency.store.jdbc.schema | public.x                  | Invalid schema name 'public.x'
			idempotency.outbox.table      | "outbox"                  | idempotency.outbox.table
			idempotency.outbox.table      | 1outbox                   | idempotency.outbox.table
			idempotency.outbox.table      | outbox_of_the_ledger_service_of_the_payments_depts_x | idempotency.outbox.table name 'outbox_of_the_ledger_service_of_the_payments_depts_x': at most 50 characters
			idempotency.store.jdbc.table  | processed_messages_of_the_payments_departments_x | idempotency.store.jdbc.table name 'processed_messages_of_the_payments_departments_x': at most 46 characters
			idempotency.flyway.table      | history-table             | idempotency.flyway.table
			""")
	void failsFastOnATableNameThatIsNotAnIdentifier(String property, String value, String message) {
		assertFailsNaming(property + "=" + value, message);
	}

	private void assertFailsNaming(String property, String message) {
		this.runner.withPropertyValues(property)
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasStackTraceContaining(message));
	}

}
