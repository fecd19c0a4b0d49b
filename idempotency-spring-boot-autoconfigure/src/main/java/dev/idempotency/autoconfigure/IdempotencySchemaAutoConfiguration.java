package dev.idempotency.autoconfigure;

import javax.sql.DataSource;

import org.flywaydb.core.Flyway;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Auto-configuration of the starter's own Flyway migration of its tables (processed
 * messages and outbox), with a history table apart from the application's.
 */
@AutoConfiguration(afterName = { "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
		"org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration" })
@ConditionalOnClass(Flyway.class)
@ConditionalOnBooleanProperty(name = "idempotency.enabled", matchIfMissing = true)
@ConditionalOnBooleanProperty(name = "idempotency.flyway.enabled", matchIfMissing = true)
@ConditionalOnSingleCandidate(DataSource.class)
@EnableConfigurationProperties(IdempotencyProperties.class)
public final class IdempotencySchemaAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	IdempotencySchemaMigration idempotencySchemaMigration(DataSource dataSource, IdempotencyProperties properties) {
		return new IdempotencySchemaMigration(dataSource, properties.store().jdbc().tableName(),
				properties.outboxTableName(), properties.flyway().table());
	}

	@Bean
	static SchemaMigrationOrdering idempotencySchemaMigrationOrdering() {
		return new SchemaMigrationOrdering();
	}

}
