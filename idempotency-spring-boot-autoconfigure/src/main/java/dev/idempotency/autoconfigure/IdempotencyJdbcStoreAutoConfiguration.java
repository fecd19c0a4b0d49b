package dev.idempotency.autoconfigure;

import javax.sql.DataSource;

import dev.idempotency.internal.consumer.ConsumerFactoryPostProcessor;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.internal.store.JdbcProcessedMessageStore;
import dev.idempotency.internal.store.ProcessedMessageCleanup;
import dev.idempotency.store.ProcessedMessageStore;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;

/**
 * Auto-configuration of the JDBC (PostgreSQL) processed-message store on the
 * application's {@code DataSource} and its retention cleanup.
 */
@AutoConfiguration(before = IdempotencyAutoConfiguration.class, after = IdempotencySchemaAutoConfiguration.class,
		afterName = "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration")
@ConditionalOnClass({ KafkaListener.class, JdbcTemplate.class })
@ConditionalOnBooleanProperty(name = "idempotency.enabled", matchIfMissing = true)
@ConditionalOnProperty(name = "idempotency.store.type", havingValue = "jdbc", matchIfMissing = true)
@ConditionalOnSingleCandidate(DataSource.class)
@EnableConfigurationProperties(IdempotencyProperties.class)
public final class IdempotencyJdbcStoreAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	ProcessedMessageStore processedMessageStore(DataSource dataSource, IdempotencyProperties properties,
			ObjectProvider<IdempotencySchemaMigration> schemaMigration) {
		// The table must exist before the first claim.
		schemaMigration.ifAvailable((migration) -> {
		});
		return new JdbcProcessedMessageStore(new JdbcTemplate(dataSource), properties.store().jdbc().tableName(),
				properties.lockTimeout());
	}

	@Bean
	@ConditionalOnMissingBean
	ProcessedMessageCleanup processedMessageCleanup(DataSource dataSource, IdempotencyProperties properties,
			ObjectProvider<IdempotencyMetrics> metrics, ObjectProvider<IdempotencySchemaMigration> schemaMigration) {
		schemaMigration.ifAvailable((migration) -> {
		});
		IdempotencyProperties.Jdbc jdbc = properties.store().jdbc();
		return new ProcessedMessageCleanup(new JdbcTemplate(dataSource), jdbc.tableName(), jdbc.retention(),
				jdbc.cleanupInterval(), metrics.getIfAvailable(() -> IdempotencyMetrics.NONE));
	}

	// binds each poll to the consumer thread, so that its keys are looked up together
	@Bean
	@ConditionalOnBooleanProperty(name = "idempotency.store.jdbc.poll-lookup", matchIfMissing = true)
	static ConsumerFactoryPostProcessor idempotencyPollLookupConsumerFactoryPostProcessor() {
		return new ConsumerFactoryPostProcessor();
	}

}
