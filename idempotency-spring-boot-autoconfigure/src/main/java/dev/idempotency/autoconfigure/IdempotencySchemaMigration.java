package dev.idempotency.autoconfigure;

import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.store.TableName;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;

import org.springframework.beans.factory.InitializingBean;

/**
 * Migrates the starter's tables with a Flyway instance of its own, with its own history
 * table, so that it never interferes with the application's migrations.
 */
final class IdempotencySchemaMigration implements InitializingBean {

	static final String LOCATION = "classpath:db/idempotency/postgresql";

	private final DataSource dataSource;

	private final TableName processedMessages;

	private final TableName outbox;

	private final String historyTable;

	IdempotencySchemaMigration(DataSource dataSource, TableName processedMessages, TableName outbox,
			String historyTable) {
		this.dataSource = dataSource;
		this.processedMessages = processedMessages;
		this.outbox = outbox;
		this.historyTable = historyTable;
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
		configuration.load().migrate();
	}

}
