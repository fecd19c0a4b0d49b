package dev.idempotency.autoconfigure;

import java.util.HashMap;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.internal.outbox.DefaultOutboxPayloadSerializer;
import dev.idempotency.internal.outbox.JdbcOutbox;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.internal.outbox.JdbcOutboxDeadLetters;
import dev.idempotency.outbox.OutboxMetrics;
import dev.idempotency.outbox.OutboxPayloadSerializer;
import dev.idempotency.internal.outbox.OutboxRelay;
import dev.idempotency.internal.outbox.OutboxRepository;
import dev.idempotency.internal.outbox.OutboxSettings;
import dev.idempotency.outbox.OutboxProducerFactoryCustomizer;
import dev.idempotency.outbox.OutboxTraceContext;
import dev.idempotency.internal.outbox.TracerOutboxTraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RoundRobinPartitioner;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import tools.jackson.databind.ObjectMapper;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.support.ProducerListener;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Auto-configuration of the transactional outbox: the {@link Outbox} bean on the
 * application's {@code DataSource}, and the relay that publishes with an idempotent
 * producer built from the application's Kafka producer settings.
 */
@AutoConfiguration(after = IdempotencySchemaAutoConfiguration.class,
		afterName = { "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
				"org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration" })
@ConditionalOnClass({ KafkaTemplate.class, JdbcTemplate.class })
@ConditionalOnBooleanProperty(name = "idempotency.enabled", matchIfMissing = true)
@ConditionalOnBooleanProperty(name = "idempotency.outbox.enabled", matchIfMissing = true)
@ConditionalOnSingleCandidate(DataSource.class)
@ConditionalOnBean(ProducerFactory.class)
@EnableConfigurationProperties(IdempotencyProperties.class)
public final class IdempotencyOutboxAutoConfiguration {

	private static final Log logger = LogFactory.getLog(IdempotencyOutboxAutoConfiguration.class);

	@Bean
	@ConditionalOnMissingBean
	OutboxRepository outboxRepository(DataSource dataSource, IdempotencyProperties properties,
			ObjectProvider<IdempotencySchemaMigration> schemaMigration) {
		// The table must exist before the first event.
		schemaMigration.ifAvailable((migration) -> {
		});
		return new OutboxRepository(new JdbcTemplate(dataSource),
				new TransactionTemplate(new DataSourceTransactionManager(dataSource)), properties.outboxTableName(),
				properties.outbox().batchSize());
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = "idempotency.outbox.relay-enabled", matchIfMissing = true)
	OutboxRelay outboxRelay(OutboxRepository repository, ProducerFactory<?, ?> producerFactory,
			IdempotencyProperties properties, ObjectProvider<OutboxMetrics> metrics,
			ObjectProvider<OutboxProducerFactoryCustomizer> customizers) {
		Map<String, Object> configs = new HashMap<>(producerFactory.getConfigurationProperties());
		// An idempotent producer keeps the partition order of pipelined sends across retries.
		configs.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
		configs.put(ProducerConfig.ACKS_CONFIG, "all");
		configs.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
		// Per-key order needs every event of a key on one partition: a partitioner that
		// ignores the record key would spread them, and consumers of different partitions
		// would see them out of order.
		configs.remove(ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG);
		Object partitioner = configs.get(ProducerConfig.PARTITIONER_CLASS_CONFIG);
		if (partitioner != null && RoundRobinPartitioner.class.getName()
			.equals((partitioner instanceof Class<?> type) ? type.getName() : partitioner.toString().trim())) {
			configs.remove(ProducerConfig.PARTITIONER_CLASS_CONFIG);
			logger.warn("The outbox relay does not use the application's " + RoundRobinPartitioner.class.getSimpleName()
					+ ", which ignores record keys: events of one key must reach one partition to keep their order");
		}
		// The relay sends the later events of a key only once the earlier one is
		// acknowledged: each such wave would wait out the linger first. Sends of one wave
		// are pipelined, so they still share batches while requests are in flight.
		configs.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 0);
		// A send blocks for max.block.ms (60 s by default) while its topic has no metadata
		// or the producer's buffer is full, outside the send timeout's wait for
		// acknowledgments: a batch could outlast its lease, and another relay send later
		// events of its keys first. Half the send timeout leaves the lease (at least twice
		// the send timeout) the time to record the batch's outcome.
		long maxBlockMs = Math.max(1, properties.outbox().sendTimeout().toMillis() / 2);
		Object configuredMaxBlock = configs.get(ProducerConfig.MAX_BLOCK_MS_CONFIG);
		if (configuredMaxBlock == null || Long.parseLong(configuredMaxBlock.toString().trim()) > maxBlockMs) {
			configs.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, maxBlockMs);
		}
		DefaultKafkaProducerFactory<String, byte[]> outboxProducers = new DefaultKafkaProducerFactory<>(configs,
				new StringSerializer(), new ByteArraySerializer());
		customizers.orderedStream().forEach((customizer) -> customizer.customize(outboxProducers));
		IdempotencyProperties.Outbox outbox = properties.outbox();
		OutboxSettings settings = new OutboxSettings(outbox.batchSize(), outbox.pollInterval(), outbox.lease(),
				outbox.sendTimeout(), outbox.maxAttempts(), outbox.initialBackoff(), outbox.backoffMultiplier(),
				outbox.maxBackoff(), outbox.jitter(), outbox.completion() == IdempotencyProperties.Completion.DELETE,
				outbox.retention(), outbox.shutdownTimeout(), outbox.idlePollInterval(), outbox.claimAhead());
		KafkaTemplate<String, byte[]> template = new KafkaTemplate<>(outboxProducers);
		// the relay records and logs failures itself, once per batch
		template.setProducerListener(new ProducerListener<>() {
		});
		OutboxRelay relay = new OutboxRelay(repository, template, settings,
				metrics.getIfAvailable(() -> OutboxMetrics.NONE));
		relay.setAutoStartup(outbox.autoStartup());
		return relay;
	}

	@Bean
	@ConditionalOnMissingBean
	Outbox outbox(OutboxRepository repository, OutboxPayloadSerializer serializer,
			ObjectProvider<OutboxRelay> relay, ObjectProvider<OutboxTraceContext> traceContext,
			IdempotencyProperties properties) {
		JdbcOutbox outbox = new JdbcOutbox(repository, serializer, () -> relay.ifAvailable(OutboxRelay::wakeUp),
				traceContext.getIfUnique(() -> OutboxTraceContext.NONE));
		outbox.setDerivedEventIds(properties.outbox().derivedEventIds());
		return outbox;
	}

	@Bean
	@ConditionalOnMissingBean
	OutboxDeadLetters outboxDeadLetters(OutboxRepository repository, ObjectProvider<OutboxRelay> relay) {
		return new JdbcOutboxDeadLetters(repository, () -> relay.ifAvailable(OutboxRelay::wakeUp));
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(Tracer.class)
	static class TracingConfiguration {

		@Bean
		@ConditionalOnMissingBean
		OutboxTraceContext outboxTraceContext(ObjectProvider<Tracer> tracer, ObjectProvider<Propagator> propagator) {
			// resolved here, not by condition: the tracer is defined by an auto-configuration
			// that may come after this one
			Tracer currentTracer = tracer.getIfUnique();
			Propagator currentPropagator = propagator.getIfUnique();
			if (currentTracer == null || currentPropagator == null || currentTracer == Tracer.NOOP) {
				return OutboxTraceContext.NONE;
			}
			return new TracerOutboxTraceContext(currentTracer, currentPropagator);
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(ObjectMapper.class)
	static class JacksonPayloadConfiguration {

		@Bean
		@ConditionalOnMissingBean
		OutboxPayloadSerializer outboxPayloadSerializer(ObjectProvider<ObjectMapper> objectMapper) {
			ObjectMapper mapper = objectMapper.getIfAvailable();
			return new DefaultOutboxPayloadSerializer((mapper != null) ? mapper::writeValueAsBytes : null);
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnMissingClass("tools.jackson.databind.ObjectMapper")
	static class PlainPayloadConfiguration {

		@Bean
		@ConditionalOnMissingBean
		OutboxPayloadSerializer outboxPayloadSerializer() {
			return new DefaultOutboxPayloadSerializer(null);
		}

	}

}
