package dev.idempotency.autoconfigure;

import dev.idempotency.test.TestApplications;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * The starter's migrations in a database that other applications share, on a real
 * PostgreSQL.
 */
class IdempotencySchemaMigrationIntegrationTests {

	@Test
	void startUpFailsNamingTheMissingTableWhenTheHistoryTableRecordsTheMigrationsOfOtherTables() {
		try (ConfigurableApplicationContext defaults = TestApplications.run(App.class, TestApplications.WITHOUT_JPA)) {
			assertThat(exists(defaults, "processed_messages")).isTrue();
		}
		// another service in the same schema, with tables of its own but the same history table
		assertThatException()
			.isThrownBy(() -> TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
					"idempotency.store.jdbc.table=billing_processed_messages",
					"idempotency.outbox.table=billing_outbox"))
			.havingRootCause()
			.withMessageContaining("'billing_processed_messages' does not exist")
			.withMessageContaining("'idempotency_schema_history'")
			.withMessageContaining("idempotency.flyway.table")
			.withMessageContaining("idempotency.flyway.enabled=false");
		try (ConfigurableApplicationContext billing = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.store.jdbc.table=billing_processed_messages", "idempotency.outbox.table=billing_outbox",
				"idempotency.flyway.table=billing_schema_history")) {
			assertThat(exists(billing, "billing_processed_messages")).isTrue();
			assertThat(exists(billing, "billing_outbox")).isTrue();
		}
	}

	private static boolean exists(ConfigurableApplicationContext context, String table) {
		return Boolean.TRUE.equals(context.getBean(JdbcTemplate.class)
			.queryForObject("SELECT to_regclass(?) IS NOT NULL", Boolean.class, table));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

	}

}
