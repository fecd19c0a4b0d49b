package dev.idempotency.autoconfigure;

import java.util.List;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * The starter's migrations beside other applications' and the application's own, on a
 * real PostgreSQL.
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

	@Test
	void runsBesideTheApplicationsOwnFlywayMigrationsEachWithItsOwnHistory() {
		String url = createDatabase("flyway_app");
		for (int start = 1; start <= 2; start++) {
			// the second start finds both histories and both sets of tables in place
			try (ConfigurableApplicationContext context = TestApplications.run(OrdersApp.class,
					TestApplications.WITHOUT_JPA, "spring.datasource.url=" + url, "spring.flyway.enabled=true")) {
				JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
				assertThat(jdbc.queryForList("SELECT version || ' ' || description FROM flyway_schema_history "
						+ "WHERE success ORDER BY installed_rank", String.class))
					.containsExactly("1 orders", "2 order lines");
				assertThat(jdbc.queryForList("SELECT version || ' ' || description FROM idempotency_schema_history "
						+ "WHERE success AND version <> '0' ORDER BY installed_rank", String.class))
					.containsExactly("1 processed messages", "2 outbox");
				assertThat(List.of("orders", "order_lines", "processed_messages", "outbox"))
					.allSatisfy((table) -> assertThat(exists(context, table)).as(table).isTrue());
			}
		}
	}

	private static String createDatabase(String name) {
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		JdbcTemplate server = new JdbcTemplate(
				new DriverManagerDataSource(postgres.jdbcUrl(), postgres.username(), postgres.password()));
		server.execute("DROP DATABASE IF EXISTS " + name);
		server.execute("CREATE DATABASE " + name);
		return postgres.jdbcUrl().replaceFirst("^(jdbc:postgresql://[^/]+/)[^?]*", "$1" + name);
	}

	private static boolean exists(ConfigurableApplicationContext context, String table) {
		return Boolean.TRUE.equals(context.getBean(JdbcTemplate.class)
			.queryForObject("SELECT to_regclass(?) IS NOT NULL", Boolean.class, table));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

	}

	/**
	 * An application with migrations of its own, whose own bean needs the outbox: that bean
	 * is created before any auto-configured one.
	 */
	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class OrdersApp {

		@Bean
		Orders orders(Outbox outbox) {
			return new Orders(outbox);
		}

	}

	record Orders(Outbox outbox) {
	}

}
