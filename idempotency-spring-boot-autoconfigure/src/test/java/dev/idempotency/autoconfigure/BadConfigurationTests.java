package dev.idempotency.autoconfigure;

import java.util.List;

import dev.idempotency.Idempotent;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.core.io.support.SpringFactoriesLoader.ArgumentResolver;
import org.springframework.core.io.support.SpringFactoriesLoader.FailureHandler;
import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Invalid property values stop the application at start-up with Spring Boot's analysis of
 * a binding failure ("Failed to bind properties under ..."), naming the property and the
 * value: negative or unparsable durations and sizes, unknown enum values, and table names
 * that are not plain SQL identifiers (or whose companion tables' names would be too
 * long). The application has an {@code @Idempotent} listener, as a real one does, so that
 * the checks of listener beans run before the properties are otherwise bound.
 */
class BadConfigurationTests {

	private final ApplicationContextRunner runner = AutoConfigurationRunners
		.onTheTestServers(IdempotencyAutoConfiguration.class, IdempotencySchemaAutoConfiguration.class,
				IdempotencyJdbcStoreAutoConfiguration.class, IdempotencyRedisAutoConfiguration.class,
				IdempotencyOutboxAutoConfiguration.class, IdempotencyHealthAutoConfiguration.class,
				IdempotencyStoreMissingAutoConfiguration.class)
		.withBean(Listener.class)
		.withPropertyValues("idempotency.outbox.relay-enabled=false", "idempotency.cache.enabled=false");

	@ParameterizedTest(name = "{0}={1}")
	@CsvSource(delimiter = '|', textBlock = """
			idempotency.lock-timeout                          | -1s   | idempotency.lock-timeout must not be negative, was PT-1S
			idempotency.store.jdbc.retention                  | -7d   | idempotency.store.jdbc.retention must be positive, was PT-168H
			idempotency.store.jdbc.cleanup-interval           | -1h   | idempotency.store.jdbc.cleanup-interval must not be negative, was PT-1H
			idempotency.store.redis.lease                     | -1m   | idempotency.store.redis.lease must be positive, was PT-1M
			idempotency.store.redis.ttl                       | -1d   | idempotency.store.redis.ttl must be positive, was PT-24H
			idempotency.cache.ttl                             | -24h  | idempotency.cache.ttl must be positive, was PT-24H
			idempotency.cache.timeout                         | -50ms | idempotency.cache.timeout must be positive, was PT-0.05S
			idempotency.cache.open-for                        | -10s  | idempotency.cache.open-for must be positive, was PT-10S
			idempotency.infrastructure-retry.initial-interval | -1s   | idempotency.infrastructure-retry.initial-interval must be positive, was PT-1S
			idempotency.infrastructure-retry.max-interval     | -30s  | idempotency.infrastructure-retry.max-interval must be positive, was PT-30S
			idempotency.lease.duration                        | -1m   | idempotency.lease.duration must be positive, was PT-1M
			idempotency.outbox.poll-interval                  | -1s   | idempotency.outbox.poll-interval must be positive, was PT-1S
			idempotency.outbox.idle-poll-interval             | -5s   | idempotency.outbox.idle-poll-interval (PT-5S) must be at least idempotency.outbox.poll-interval (PT0.5S)
			idempotency.outbox.lease                          | -2m   | idempotency.outbox.lease must be positive, was PT-2M
			idempotency.outbox.send-timeout                   | -30s  | idempotency.outbox.send-timeout must be positive, was PT-30S
			idempotency.outbox.initial-backoff                | -1s   | idempotency.outbox.initial-backoff must be positive, was PT-1S
			idempotency.outbox.max-backoff                    | -5m   | idempotency.outbox.max-backoff must be positive, was PT-5M
			idempotency.outbox.retention                      | -7d   | idempotency.outbox.retention must be positive, was PT-168H
			idempotency.outbox.shutdown-timeout               | -10s  | idempotency.outbox.shutdown-timeout must not be negative, was PT-10S
			idempotency.health.outbox.max-oldest-age          | -5m   | idempotency.health.outbox.max-oldest-age must be positive, was PT-5M
			""")
	void failsFastOnANegativeDuration(String property, String value, String reason) {
		assertFailsToBind(property, value, "Reason: java.lang.IllegalArgumentException: " + reason);
	}

	@ParameterizedTest(name = "{0}={1}")
	@CsvSource(delimiter = '|', textBlock = """
			idempotency.lock-timeout                          | 5 seconds
			idempotency.store.jdbc.retention                  | a week
			idempotency.store.jdbc.cleanup-interval           | hourly
			idempotency.store.redis.lease                     | 1 minute
			idempotency.store.redis.ttl                       | 7days
			idempotency.cache.ttl                             | 24hours
			idempotency.cache.timeout                         | 50 ms
			idempotency.cache.open-for                        | 10sec
			idempotency.infrastructure-retry.initial-interval | 1sec
			idempotency.infrastructure-retry.max-interval     | 30sec
			idempotency.lease.duration                        | forever
			idempotency.outbox.poll-interval                  | 0.5s
			idempotency.outbox.idle-poll-interval             | 5 s
			idempotency.outbox.lease                          | 2min
			idempotency.outbox.send-timeout                   | 30secs
			idempotency.outbox.initial-backoff                | 1 s
			idempotency.outbox.max-backoff                    | 5mins
			idempotency.outbox.retention                      | 1w
			idempotency.outbox.shutdown-timeout               | ten seconds
			idempotency.health.outbox.max-oldest-age          | 5minutes
			""")
	void failsFastOnAnUnparsableDuration(String property, String value) {
		assertFailsToBind(property, value, "Property: " + property, "Value: \"" + value + "\"",
				"to java.time.Duration");
	}

	@ParameterizedTest(name = "{0}={1}")
	@CsvSource(delimiter = '|', textBlock = """
			idempotency.lease.max-result-size | 64 kilobytes | Value: "64 kilobytes"
			idempotency.lease.max-result-size | 0B           | idempotency.lease.max-result-size must be positive, was 0B
			idempotency.lease.max-result-size | -1KB         | idempotency.lease.max-result-size must be positive, was -1024B
			""")
	void failsFastOnABadSize(String property, String value, String reason) {
		assertFailsToBind(property, value, reason);
	}

	@ParameterizedTest(name = "{0}={1}")
	@CsvSource(delimiter = '|', textBlock = """
			idempotency.outbox.batch-size               | 0   | idempotency.outbox.batch-size must be at least 1, was 0
			idempotency.outbox.max-attempts             | 0   | idempotency.outbox.max-attempts must be at least 1, was 0
			idempotency.outbox.backoff-multiplier       | 0.5 | idempotency.outbox.backoff-multiplier must be at least 1, was 0.5
			idempotency.outbox.jitter                   | 1.5 | idempotency.outbox.jitter must be between 0 and 1, was 1.5
			idempotency.infrastructure-retry.multiplier | 0.5 | idempotency.infrastructure-retry.multiplier must be at least 1, was 0.5
			idempotency.cache.failure-threshold         | 0   | idempotency.cache.failure-threshold must be at least 1, was 0
			idempotency.health.outbox.max-dead          | -1  | idempotency.health.outbox.max-dead must not be negative, was -1
			idempotency.health.outbox.max-dead          | 10001 | idempotency.health.outbox.max-dead must be at most 10000 (the outbox counts no further), was 10001
			""")
	void failsFastOnANumberOutOfRange(String property, String value, String reason) {
		assertFailsToBind(property, value, "Reason: java.lang.IllegalArgumentException: " + reason);
	}

	@ParameterizedTest(name = "{0}={1}")
	@CsvSource(delimiter = '|', textBlock = """
			idempotency.missing-key              | drop    | RECORD_COORDINATES
			idempotency.store.type               | mongodb | REDIS
			idempotency.outbox.completion        | archive | MARK
			idempotency.lease.fingerprint-mismatch | ignore | WARN
			""")
	void failsFastOnAnUnknownEnumValue(String property, String value, String aValidValue) {
		assertFailsToBind(property, value, "Property: " + property, "Value: \"" + value + "\"",
				"The following values are valid:", aValidValue);
	}

	@ParameterizedTest(name = "{0}={1}")
	@CsvSource(delimiter = '|', textBlock = """
			idempotency.store.jdbc.table  | keys; DROP TABLE accounts | Invalid idempotency.store.jdbc.table name 'keys; DROP TABLE accounts'
			idempotency.store.jdbc.schema | public.x                  | Invalid idempotency.store.jdbc.schema name 'public.x'
			idempotency.outbox.table      | "outbox"                  | Invalid idempotency.outbox.table name '"outbox"'
			idempotency.outbox.table      | 1outbox                   | Invalid idempotency.outbox.table name '1outbox'
			idempotency.outbox.table      | outbox_of_the_ledger_service_of_the_payments_depts_x | Invalid idempotency.outbox.table name 'outbox_of_the_ledger_service_of_the_payments_depts_x': at most 50 characters
			idempotency.store.jdbc.table  | processed_messages_of_the_payments_departments_x | Invalid idempotency.store.jdbc.table name 'processed_messages_of_the_payments_departments_x': at most 46 characters
			idempotency.flyway.table      | history-table             | Invalid idempotency.flyway.table name 'history-table'
			""")
	void failsFastOnATableNameThatIsNotAnIdentifier(String property, String value, String reason) {
		assertFailsToBind(property, value, "Reason: java.lang.IllegalArgumentException: " + reason);
	}

	/**
	 * Assert that the application does not start with the property's value, and that
	 * Spring Boot reports a failure to bind the property (or the group it is in) whose
	 * analysis says all of the given fragments.
	 */
	private void assertFailsToBind(String property, String value, String... fragments) {
		this.runner.withPropertyValues(property + "=" + value).run((context) -> {
			assertThat(context).hasFailed();
			FailureAnalysis analysis = analyze(context.getStartupFailure());
			assertThat(analysis).as("Spring Boot's analysis of %s", context.getStartupFailure()).isNotNull();
			String report = analysis.getDescription() + "\n" + analysis.getAction();
			assertThat(analysis.getDescription()).startsWith("Failed to bind properties under '"
					+ property.substring(0, property.lastIndexOf('.')));
			assertThat(report).contains(fragments);
		});
	}

	/**
	 * Analyze a start-up failure as Spring Boot does before it prints "APPLICATION FAILED
	 * TO START": with the failure analyzers of {@code spring.factories}, the first that
	 * recognizes it. Those that need the failed context's bean factory or environment are
	 * left out: they analyze failures of other kinds.
	 */
	private static FailureAnalysis analyze(Throwable failure) {
		List<FailureAnalyzer> analyzers = SpringFactoriesLoader
			.forDefaultResourceLocation(BadConfigurationTests.class.getClassLoader())
			.load(FailureAnalyzer.class, ArgumentResolver.none(), FailureHandler.handleMessage((message, ex) -> {
			}));
		for (FailureAnalyzer analyzer : analyzers) {
			FailureAnalysis analysis = analyzer.analyze(failure);
			if (analysis != null) {
				return analysis;
			}
		}
		return null;
	}

	static class Listener {

		@KafkaListener(topics = "bad-configuration", autoStartup = "false")
		@Idempotent
		public void on(String payload) {
		}

	}

}
