package dev.idempotency.autoconfigure;

import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.internal.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.internal.metrics.MicrometerOutboxMetrics;
import dev.idempotency.outbox.OutboxMetrics;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Auto-configuration of the idempotency meters, when the application has a Micrometer
 * {@link MeterRegistry}.
 */
@AutoConfiguration(before = { IdempotencyAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class },
		afterName = { "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
				"org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
				"org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration" })
@ConditionalOnClass(MeterRegistry.class)
@ConditionalOnBean(MeterRegistry.class)
public final class IdempotencyMetricsAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	IdempotencyMetrics idempotencyMetrics(MeterRegistry meterRegistry) {
		return new MicrometerIdempotencyMetrics(meterRegistry);
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnClass(name = "org.springframework.kafka.core.KafkaTemplate")
	OutboxMetrics outboxMetrics(MeterRegistry meterRegistry) {
		return new MicrometerOutboxMetrics(meterRegistry);
	}

}
