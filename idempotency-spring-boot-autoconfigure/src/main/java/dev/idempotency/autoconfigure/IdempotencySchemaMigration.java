package dev.idempotency.autoconfigure;

import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.internal.store.TableName;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.core.NativeDetector;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Migrates the starter's tables with a Flyway instance of its own, with its own history
 * table, so that it never interferes with the application's migrations, then checks that
 * the configured tables exist.
 */
final class IdempotencySchemaMigration implements InitializingBean {

	static final String LOCATION = "classpath:db/idempotency/postgresql";

	private static final String TABLE_EXISTS = "SELECT to_regclass(?) IS NOT NULL";

	private final DataSource dataSource;

	private final TableName processedMessages;

	private final TableName outbox;

	private final String historyTable;

	private final boolean nativeImage;

	IdempotencySchemaMigration(DataSource dataSource, TableName processedMessages, TableName outbox,
			String historyTable) {
		this(dataSource, processedMessages, outbox, historyTable, NativeDetector.inNativeImage());
	}

	IdempotencySchemaMigration(DataSource dataSource, TableName processedMessages, TableName outbox,
			String historyTable, boolean nativeImage) {
		this.dataSource = dataSource;
		this.processedMessages = processedMessages;
		this.outbox = outbox;
		this.historyTable = historyTable;
		this.nativeImage = nativeImage;
	}

	@Override
	public void afterPropertiesSet() {
		FluentConfiguration configuration = Flyway.configure(getClass().getClassLoader())
			.dataSource(this.dataSource)
			.locations(LOCATION)
			.table(this.historyTable)
			// The application's schema is usually not empty: start the history at 0 so that
			// V1 still runs.
			.baselineOnMigrate(true)
			.baselineVersion("0")
			.placeholders(Map.of("processed_messages_table", this.processedMessages.qualified(),
					"processed_messages_table_name", this.processedMessages.table(), "outbox_table",
					this.outbox.qualified(), "outbox_table_name", this.outbox.table()));
		if (this.processedMessages.schema() != null) {
			configuration.schemas(this.processedMessages.schema()).createSchemas(true);
		}
		if (this.nativeImage) {
			configuration.resourceProvider(new NativeImageMigrations(configuration.getClassLoader(),
					configuration.getEncoding()));
		}
		configuration.load().migrate();
		requireTables();
	}

	/**
	 * Fail when a configured table is missing after the migration: the history table
	 * recorded the migrations as applied, for tables of other names.
	 */
	private void requireTables() {
		JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);
		// the relay's claims table is named after the outbox table
		for (String table : List.of(this.processedMessages.qualified(), this.outbox.qualified(),
				this.outbox.qualified() + "_claims")) {
			if (!Boolean.TRUE.equals(jdbc.queryForObject(TABLE_EXISTS, Boolean.class, table))) {
				String history = new TableName(this.processedMessages.schema(), this.historyTable).qualified();
				throw new IllegalStateException("Table '" + table + "' does not exist, although the Flyway history "
						+ "table '" + history + "' records the starter's migrations as applied: they ran for tables "
						+ "of other names (another application sharing this schema with other "
						+ "idempotency.store.jdbc.table or idempotency.outbox.table settings, or a renamed table). "
						+ "Set idempotency.flyway.table to a history table of this application's own, or create the "
						+ "tables yourself and set idempotency.flyway.enabled=false");
			}
		}
	}

}
