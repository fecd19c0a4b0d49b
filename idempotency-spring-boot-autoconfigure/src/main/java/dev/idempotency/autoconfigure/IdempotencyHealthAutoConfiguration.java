package dev.idempotency.autoconfigure;

import javax.sql.DataSource;

import dev.idempotency.internal.outbox.OutboxReplicationRelay;
import dev.idempotency.internal.outbox.OutboxRepository;
import dev.idempotency.internal.store.JdbcProcessedMessageStore;
import dev.idempotency.store.ProcessedMessageStore;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Auto-configuration of the {@code idempotency} health contributor, when Spring Boot's
 * health support (Actuator) is on the classpath. Switched off with
 * {@code management.health.idempotency.enabled=false}.
 */
@AutoConfiguration(after = { IdempotencyJdbcStoreAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class })
@ConditionalOnClass(name = { "org.springframework.boot.health.contributor.HealthIndicator",
		"org.springframework.jdbc.core.JdbcTemplate" })
@ConditionalOnBooleanProperty(name = "idempotency.enabled", matchIfMissing = true)
@ConditionalOnEnabledHealthIndicator("idempotency")
@EnableConfigurationProperties({ IdempotencyProperties.class, IdempotencyHealthProperties.class })
public final class IdempotencyHealthAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyHealthIndicator")
	HealthIndicator idempotencyHealthIndicator(ObjectProvider<ProcessedMessageStore> store,
			ObjectProvider<DataSource> dataSource, ObjectProvider<OutboxRepository> outbox,
			ObjectProvider<OutboxReplicationRelay> replication, IdempotencyProperties properties,
			IdempotencyHealthProperties health) {
		DataSource storeDataSource = (store.getIfUnique() instanceof JdbcProcessedMessageStore)
				? dataSource.getIfUnique() : null;
		return new IdempotencyHealthIndicator((storeDataSource != null) ? new JdbcTemplate(storeDataSource) : null,
				properties.store().jdbc().tableName(), outbox.getIfAvailable(), replication.getIfUnique(),
				health.outbox());
	}

}
