package dev.idempotency.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Map;


import dev.idempotency.internal.store.TableName;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.store.LeaseClaim;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

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
					.containsExactly("1 processed messages", "2 outbox", "3 lease claims", "4 outbox claims",
						"5 outbox due at once", "6 outbox dead index");
				assertThat(List.of("orders", "order_lines", "processed_messages", "outbox", "outbox_claims"))
					.allSatisfy((table) -> assertThat(exists(context, table)).as(table).isTrue());
			}
		}
	}

	@Test
	void migratesWithTheMigrationsListedAsInANativeImage() {
		String url = createDatabase("native_image_listing");
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		DriverManagerDataSource dataSource = new DriverManagerDataSource(url, postgres.username(),
				postgres.password());
		new IdempotencySchemaMigration(dataSource, new TableName(null, "processed_messages"),
				new TableName(null, "outbox"), "idempotency_schema_history", true)
			.afterPropertiesSet();
		assertThat(new JdbcTemplate(dataSource).queryForList("SELECT version || ' ' || description FROM "
				+ "idempotency_schema_history WHERE success AND version <> '0' ORDER BY installed_rank", String.class))
			.containsExactly("1 processed messages", "2 outbox", "3 lease claims", "4 outbox claims",
					"5 outbox due at once", "6 outbox dead index");
	}

	@Test
	void migratesATableOfThePreviousVersionInPlaceKeepingItsRowsProcessed() {
		String url = createDatabase("previous_version");
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		DriverManagerDataSource dataSource = new DriverManagerDataSource(url, postgres.username(),
				postgres.password());
		// the schema as the previous version left it, with keys processed by it
		Flyway.configure()
			.dataSource(dataSource)
			.locations(IdempotencySchemaMigration.LOCATION)
			.table("idempotency_schema_history")
			.baselineOnMigrate(true)
			.baselineVersion("0")
			.target("2")
			.placeholders(Map.of("processed_messages_table", "processed_messages", "processed_messages_table_name",
					"processed_messages", "outbox_table", "outbox", "outbox_table_name", "outbox"))
			.load()
			.migrate();
		JdbcTemplate before = new JdbcTemplate(dataSource);
		before.update("INSERT INTO processed_messages (consumer_group, idempotency_key, topic, partition, "
				+ "record_offset) VALUES ('ledger', 'old-1', 'payments', 0, 41), ('ledger', 'old-2', 'payments', 1, 7)");
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"spring.datasource.url=" + url)) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			assertThat(jdbc.queryForList("SELECT version FROM idempotency_schema_history WHERE success "
					+ "AND version <> '0' ORDER BY installed_rank", String.class))
				.containsExactly("1", "2", "3", "4", "5", "6");
			assertThat(jdbc.queryForList("SELECT idempotency_key || ' ' || coalesce(status, 'null') || ' ' || "
					+ "record_offset FROM processed_messages ORDER BY idempotency_key", String.class))
				.containsExactly("old-1 null 41", "old-2 null 7");
			ProcessedMessageStore store = context.getBean(ProcessedMessageStore.class);
			assertThat(store.isProcessed("ledger", "old-1")).isTrue();
			// a key of the previous version is a duplicate to both modes
			Boolean isNew = new TransactionTemplate(context.getBean(PlatformTransactionManager.class))
				.execute((status) -> store.claim(new ProcessedMessage("ledger", "old-1", "payments", 0, 41)).isNew());
			assertThat(isNew).isFalse();
			LeaseStore leases = store.leases();
			assertThat(leases.claim(new ProcessedMessage("ledger", "old-2", "payments", 1, 7), Duration.ofMinutes(1),
					null)
				.state()).isEqualTo(LeaseClaim.State.COMPLETED);
			LeaseClaim fresh = leases.claim(new ProcessedMessage("ledger", "new-1", "payments", 0, 42),
					Duration.ofMinutes(1), null);
			assertThat(fresh.state()).isEqualTo(LeaseClaim.State.ACQUIRED);
			assertThat(leases.complete(new ProcessedMessage("ledger", "new-1", "payments", 0, 42),
					fresh.fencingToken(), null))
				.isTrue();
			assertThat(store.isProcessed("ledger", "new-1")).isTrue();
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
