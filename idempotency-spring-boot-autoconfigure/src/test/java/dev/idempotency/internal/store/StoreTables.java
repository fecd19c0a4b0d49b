package dev.idempotency.internal.store;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.test.TestInfrastructure;

import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What the JDBC store tests share: connection pools on the test PostgreSQL, and tables
 * of processed messages created by the shipped migrations.
 */
final class StoreTables {

	private static final String[] MIGRATIONS = { "V1__processed_messages.sql", "V3__lease_claims.sql" };

	private StoreTables() {
	}

	/**
	 * A connection pool on the test PostgreSQL, with Hikari's defaults; it connects on
	 * first use, so that its settings can still be changed.
	 * @return the pool, to close
	 */
	static HikariDataSource dataSource() {
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		HikariDataSource dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(postgres.jdbcUrl());
		dataSource.setUsername(postgres.username());
		dataSource.setPassword(postgres.password());
		return dataSource;
	}

	/**
	 * A connection pool on the test PostgreSQL.
	 * @param maximumPoolSize its size
	 * @return the pool, to close
	 */
	static HikariDataSource dataSource(int maximumPoolSize) {
		HikariDataSource dataSource = dataSource();
		dataSource.setMaximumPoolSize(maximumPoolSize);
		return dataSource;
	}

	/**
	 * Create a table of processed messages, for claims and leases, with the shipped
	 * migrations.
	 * @param dataSource the database
	 * @param table the table
	 * @throws IOException if a migration cannot be read
	 */
	static void create(DataSource dataSource, TableName table) throws IOException {
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		for (String migration : MIGRATIONS) {
			jdbc.execute(new ClassPathResource("db/idempotency/postgresql/" + migration)
				.getContentAsString(StandardCharsets.UTF_8)
				.replace("${processed_messages_table}", table.qualified())
				.replace("${processed_messages_table_name}", table.table()));
		}
	}

}
