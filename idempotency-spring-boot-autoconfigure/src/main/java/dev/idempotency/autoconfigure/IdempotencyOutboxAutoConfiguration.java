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
import dev.idempotency.internal.outbox.OutboxReplicationRelay;
import dev.idempotency.internal.outbox.ReplicationSettings;
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
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;
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
	@ConditionalOnBooleanProperty(name = "idempotency.outbox.replication.enabled", havingValue = false,
			matchIfMissing = true)
	OutboxRelay outboxRelay(OutboxRepository repository, ProducerFactory<?, ?> producerFactory,
			IdempotencyProperties properties, ObjectProvider<OutboxMetrics> metrics,
			ObjectProvider<OutboxProducerFactoryCustomizer> customizers) {
		OutboxRelay relay = new OutboxRelay(repository, outboxTemplate(producerFactory, properties, customizers),
				outboxSettings(properties), metrics.getIfAvailable(() -> OutboxMetrics.NONE));
		relay.setAutoStartup(properties.outbox().autoStartup());
		return relay;
	}

	/**
	 * The template of a relay: an idempotent producer built from the application's
	 * producer settings.
	 */
	static KafkaTemplate<String, byte[]> outboxTemplate(ProducerFactory<?, ?> producerFactory,
			IdempotencyProperties properties, ObjectProvider<OutboxProducerFactoryCustomizer> customizers) {
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
		// After failed sends the relay closes its producer, so that nothing it gave up on
		// reaches the broker later: at once, dropping what is still queued (Spring's default
		// waits 30 s for it, past the lease's margin and, for the replication relay, with
		// nothing said to the server meanwhile). The relay has awaited every send it wants.
		outboxProducers.setPhysicalCloseTimeout(0);
		customizers.orderedStream().forEach((customizer) -> customizer.customize(outboxProducers));
		KafkaTemplate<String, byte[]> template = new KafkaTemplate<>(outboxProducers);
		// the relay records and logs failures itself, once per batch
		template.setProducerListener(new ProducerListener<>() {
		});
		return template;
	}

	static OutboxSettings outboxSettings(IdempotencyProperties properties) {
		IdempotencyProperties.Outbox outbox = properties.outbox();
		return new OutboxSettings(outbox.batchSize(), outbox.pollInterval(), outbox.lease(), outbox.sendTimeout(),
				outbox.maxAttempts(), outbox.initialBackoff(), outbox.backoffMultiplier(), outbox.maxBackoff(),
				outbox.jitter(), outbox.completion() == IdempotencyProperties.Completion.DELETE, outbox.retention(),
				outbox.shutdownTimeout(), outbox.idlePollInterval(), outbox.claimAhead());
	}

	@Bean
	@ConditionalOnMissingBean
	Outbox outbox(OutboxRepository repository, OutboxPayloadSerializer serializer,
			ObjectProvider<OutboxRelay> relay, ObjectProvider<OutboxReplicationRelay> replicationRelay,
			ObjectProvider<OutboxTraceContext> traceContext, IdempotencyProperties properties) {
		JdbcOutbox outbox = new JdbcOutbox(repository, serializer, () -> {
			relay.ifAvailable(OutboxRelay::wakeUp);
			replicationRelay.ifAvailable(OutboxReplicationRelay::wakeUp);
		}, traceContext.getIfUnique(() -> OutboxTraceContext.NONE));
		outbox.setDerivedEventIds(properties.outbox().derivedEventIds());
		return outbox;
	}

	@Bean
	@ConditionalOnMissingBean
	OutboxDeadLetters outboxDeadLetters(OutboxRepository repository, ObjectProvider<OutboxRelay> relay) {
		return new JdbcOutboxDeadLetters(repository, () -> relay.ifAvailable(OutboxRelay::wakeUp));
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(name = { "org.postgresql.replication.PGReplicationStream",
			"org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails" })
	@ConditionalOnBooleanProperty(name = "idempotency.outbox.relay-enabled", matchIfMissing = true)
	@ConditionalOnBooleanProperty("idempotency.outbox.replication.enabled")
	static class ReplicationRelayConfiguration {

		@Bean
		@ConditionalOnMissingBean
		OutboxReplicationRelay outboxReplicationRelay(OutboxRepository repository, DataSource dataSource,
				ProducerFactory<?, ?> producerFactory, IdempotencyProperties properties,
				ObjectProvider<JdbcConnectionDetails> connectionDetails, ObjectProvider<OutboxMetrics> metrics,
				ObjectProvider<OutboxProducerFactoryCustomizer> customizers) {
			IdempotencyProperties.Outbox outbox = properties.outbox();
			IdempotencyProperties.Replication replication = outbox.replication();
			JdbcConnectionDetails details = connectionDetails.getIfUnique();
			String url = (replication.url() != null) ? replication.url()
					: (details != null) ? details.getJdbcUrl() : null;
			if (url == null) {
				throw new IllegalStateException("idempotency.outbox.replication.enabled=true needs the JDBC URL of "
						+ "the replication connection: set idempotency.outbox.replication.url (the application has no "
						+ "JdbcConnectionDetails to take it from)");
			}
			String username = (replication.username() != null) ? replication.username()
					: (details != null) ? details.getUsername() : null;
			String password = (replication.password() != null) ? replication.password()
					: (details != null) ? details.getPassword() : null;
			String urlProperty = (replication.url() != null || replication.username() != null)
					? "idempotency.outbox.replication.url/username" : "spring.datasource.url/username";
			ReplicationSettings settings = new ReplicationSettings(properties.outboxTableName(),
					outbox.replicationSlotName(), outbox.replicationPublicationName(), url, username, password,
					replication.createSlot(), replication.standbyRetryInterval(), replication.statusInterval(),
					urlProperty);
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			OutboxReplicationRelay relay = new OutboxReplicationRelay(repository, jdbc,
					new TransactionTemplate(new DataSourceTransactionManager(dataSource)),
					outboxTemplate(producerFactory, properties, customizers), outboxSettings(properties), settings,
					metrics.getIfAvailable(() -> OutboxMetrics.NONE));
			relay.setAutoStartup(outbox.autoStartup());
			return relay;
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnMissingClass("org.postgresql.replication.PGReplicationStream")
	@ConditionalOnBooleanProperty(name = "idempotency.outbox.relay-enabled", matchIfMissing = true)
	@ConditionalOnBooleanProperty("idempotency.outbox.replication.enabled")
	static class ReplicationRelayWithoutDriverConfiguration {

		@Bean
		Object outboxReplicationRelay() {
			throw new IllegalStateException("idempotency.outbox.replication.enabled=true needs the PostgreSQL JDBC "
					+ "driver (org.postgresql:postgresql) on the classpath");
		}

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
