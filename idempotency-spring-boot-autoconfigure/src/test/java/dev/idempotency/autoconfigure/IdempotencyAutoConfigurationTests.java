package dev.idempotency.autoconfigure;

import dev.idempotency.internal.consumer.InfrastructureRetryInstaller;
import java.util.Map;

import jakarta.persistence.EntityManagerFactory;
import org.mockito.Mockito;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.reactivestreams.Publisher;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.messaging.handler.annotation.Headers;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.transaction.support.DefaultTransactionStatus;
import org.springframework.transaction.support.ResourceTransactionManager;
import java.util.List;

import javax.sql.DataSource;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.cache.RedisProcessedMessageStore;
import dev.idempotency.internal.consumer.IdempotentListenerAdvisor;
import dev.idempotency.internal.consumer.IdempotentListenerInterceptor;
import dev.idempotency.internal.key.DefaultIdempotencyKeyResolver;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.internal.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.internal.store.JdbcProcessedMessageStore;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import dev.idempotency.StoredResultCodec;
import dev.idempotency.FingerprintMismatchPolicy;
import dev.idempotency.test.TestInfrastructure;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.scheduling.annotation.Async;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link IdempotencyAutoConfiguration} and
 * {@link IdempotencyMetricsAutoConfiguration}.
 */
@ExtendWith(OutputCaptureExtension.class)
class IdempotencyAutoConfigurationTests {

	private final ApplicationContextRunner runner = AutoConfigurationRunners.onTheTestDatabase(
			IdempotencyAutoConfiguration.class, IdempotencySchemaAutoConfiguration.class,
			IdempotencyJdbcStoreAutoConfiguration.class, IdempotencyRedisAutoConfiguration.class,
			IdempotencyMetricsAutoConfiguration.class);

	// the stores' auto-configurations without a DataSource
	private final ApplicationContextRunner withoutDataSource = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(IdempotencyAutoConfiguration.class,
				IdempotencyJdbcStoreAutoConfiguration.class, IdempotencyRedisAutoConfiguration.class));

	// the Redis-only store, on a Redis nobody listens to
	private final ApplicationContextRunner redisStore = this.withoutDataSource
		.withBean(LettuceConnectionFactory.class, () -> new LettuceConnectionFactory("127.0.0.1", 1))
		.withPropertyValues("idempotency.store.type=redis");

	@Test
	void configuresTheInterceptorOnTheApplicationsDataSourceAndMigratesTheTable() {
		this.runner.run((context) -> {
			assertThat(context).hasSingleBean(IdempotentListenerAdvisor.class)
				.hasSingleBean(IdempotentListenerInterceptor.class)
				.hasSingleBean(IdempotencySchemaMigration.class);
			assertThat(context.getBean(ProcessedMessageStore.class)).isInstanceOf(JdbcProcessedMessageStore.class);
			assertThat(context.getBean(IdempotencyKeyResolver.class))
				.isInstanceOf(DefaultIdempotencyKeyResolver.class);
			assertThat(tableExists(new JdbcTemplate(context.getBean(DataSource.class)), "public", "processed_messages")).isTrue();
			assertThat(tableExists(new JdbcTemplate(context.getBean(DataSource.class)), "public", "idempotency_schema_history"))
				.isTrue();
		});
	}

	@Test
	void backsOffWithoutDataSource() {
		this.withoutDataSource.run((context) -> assertThat(context).hasNotFailed()
			.doesNotHaveBean(IdempotentListenerAdvisor.class)
			.doesNotHaveBean(ProcessedMessageStore.class));
	}

	@Test
	void failsFastOnAnIdempotentMethodWhenNoStoreIsConfigured() {
		// two DataSources, neither @Primary: the JDBC store cannot choose
		this.withoutDataSource
			.withConfiguration(AutoConfigurations.of(IdempotencyStoreMissingAutoConfiguration.class))
			.withBean("ledgerDataSource", DataSource.class, () -> new DriverManagerDataSource(
					TestInfrastructure.postgres().jdbcUrl()))
			.withBean("auditDataSource", DataSource.class, () -> new DriverManagerDataSource(
					TestInfrastructure.postgres().jdbcUrl()))
			.withBean(PlainListener.class)
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasMessageContaining("no idempotency store is configured")
				.hasMessageContaining("@Primary"));
	}

	@Test
	void startsWithoutAStoreWhenNoMethodIsIdempotent() {
		this.withoutDataSource
			.withConfiguration(AutoConfigurations.of(IdempotencyStoreMissingAutoConfiguration.class))
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(ProcessedMessageStore.class));
	}

	@Test
	void backsOffWithoutSpringKafka() {
		this.runner.withClassLoader(new FilteredClassLoader(KafkaListener.class))
			.run((context) -> assertThat(context).hasNotFailed()
				.doesNotHaveBean(IdempotentListenerAdvisor.class)
				.doesNotHaveBean(ProcessedMessageStore.class));
	}

	@Test
	void backsOffWhenDisabled() {
		this.runner.withPropertyValues("idempotency.enabled=false")
			.run((context) -> assertThat(context).hasNotFailed()
				.doesNotHaveBean(IdempotentListenerAdvisor.class)
				.doesNotHaveBean(ProcessedMessageStore.class));
	}

	@Test
	void userBeansReplaceTheDefaults() {
		this.runner.withUserConfiguration(CustomBeans.class).run((context) -> {
			assertThat(context).getBean(IdempotencyKeyResolver.class).isSameAs(CustomBeans.RESOLVER);
			assertThat(context).getBean(ProcessedMessageStore.class).isSameAs(CustomBeans.STORE);
		});
	}

	@Test
	void recordsMetersWhenTheApplicationHasAMeterRegistry() {
		this.runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.run((context) -> assertThat(context).getBean(IdempotencyMetrics.class)
				.isInstanceOf(MicrometerIdempotencyMetrics.class));
		this.runner.run((context) -> assertThat(context).doesNotHaveBean(IdempotencyMetrics.class));
	}

	@Test
	void skipsTheMigrationWhenSwitchedOff() {
		this.runner.withPropertyValues("idempotency.flyway.enabled=false")
			.run((context) -> assertThat(context).hasNotFailed()
				.doesNotHaveBean(IdempotencySchemaMigration.class)
				.hasSingleBean(ProcessedMessageStore.class));
	}

	@Test
	void skipsTheMigrationWithoutFlyway() {
		this.runner.withClassLoader(new FilteredClassLoader(Flyway.class))
			.run((context) -> assertThat(context).hasNotFailed()
				.doesNotHaveBean(IdempotencySchemaMigration.class)
				.hasSingleBean(ProcessedMessageStore.class));
	}

	@Test
	void migratesAConfiguredSchemaAndTable() {
		this.runner
			.withPropertyValues("idempotency.store.jdbc.schema=idempotency_custom",
					"idempotency.store.jdbc.table=handled_keys")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(tableExists(new JdbcTemplate(context.getBean(DataSource.class)), "idempotency_custom", "handled_keys"))
					.isTrue();
			});
	}

	@Test
	void appliesTheConfiguredAdvisorOrder() {
		this.runner.withPropertyValues("idempotency.advisor-order=42")
			.run((context) -> assertThat(context.getBean(IdempotentListenerAdvisor.class).getOrder()).isEqualTo(42));
	}

	@Test
	void putsARedisCacheInFrontOfTheJdbcStoreWhenTheApplicationHasRedis() {
		this.runner.withBean(LettuceConnectionFactory.class, () -> new LettuceConnectionFactory("127.0.0.1", 1))
			.run((context) -> {
				assertThat(context).hasSingleBean(ProcessedKeyCache.class);
				assertThat(context.getBean(ProcessedMessageStore.class)).isInstanceOf(JdbcProcessedMessageStore.class);
			});
	}

	@Test
	void usesNoCacheWhenSwitchedOff() {
		this.runner.withBean(LettuceConnectionFactory.class, () -> new LettuceConnectionFactory("127.0.0.1", 1))
			.withPropertyValues("idempotency.cache.enabled=false")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(ProcessedKeyCache.class));
	}

	@Test
	void usesRedisAsTheStoreWhenChosen() {
		this.redisStore.run((context) -> {
			assertThat(context).hasNotFailed().doesNotHaveBean(ProcessedKeyCache.class);
			assertThat(context.getBean(ProcessedMessageStore.class)).isInstanceOf(RedisProcessedMessageStore.class);
			assertThat(context).hasSingleBean(IdempotentListenerInterceptor.class);
		});
	}

	@Test
	void refusesLeaseModeOnTheRedisStore() {
		this.redisStore.withBean(LeaseListener.class)
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasMessageContaining("LeaseListener.on")
				.hasMessageContaining("which the redis store does not support")
				.hasMessageContaining("idempotency.store.type=jdbc"));
	}

	@Test
	void bindsTheLeaseSettingsAndStoresResultsWithJackson() {
		this.runner.withBean(LeaseListener.class)
			.withPropertyValues("idempotency.lease.duration=45s",
					"idempotency.lease.non-retryable=java.lang.IllegalArgumentException,java.io.IOException",
					"idempotency.lease.fingerprint-mismatch=warn", "idempotency.lease.max-result-size=1KB")
			.run((context) -> {
				assertThat(context).hasNotFailed().hasSingleBean(StoredResultCodec.class);
				IdempotencyProperties.Lease lease = context.getBean(IdempotencyProperties.class).lease();
				assertThat(lease.duration()).isEqualTo(java.time.Duration.ofSeconds(45));
				assertThat(lease.nonRetryable()).containsExactly(IllegalArgumentException.class,
						java.io.IOException.class);
				assertThat(lease.fingerprintMismatch()).isEqualTo(FingerprintMismatchPolicy.WARN);
				assertThat(lease.maxResultSize().toBytes()).isEqualTo(1024);
			});
	}

	@Test
	void refusesACachePrefixThatStartsTheRedisStorePrefix() {
		this.runner.withBean(LettuceConnectionFactory.class, () -> new LettuceConnectionFactory("127.0.0.1", 1))
			.withPropertyValues("idempotency.cache.key-prefix=idempotency:")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("idempotency.cache.key-prefix ('idempotency:')")
				.hasMessageContaining("idempotency.store.redis.key-prefix ('idempotency:store:') overlap"));
	}

	@Test
	void refusesARedisStorePrefixThatStartsWithTheCachePrefix() {
		this.runner.withBean(LettuceConnectionFactory.class, () -> new LettuceConnectionFactory("127.0.0.1", 1))
			.withPropertyValues("idempotency.store.redis.key-prefix=idempotency:cache:claims:")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("idempotency.cache.key-prefix ('idempotency:cache:')")
				.hasMessageContaining("idempotency.store.redis.key-prefix ('idempotency:cache:claims:') overlap"));
	}

	@Test
	void acceptsAnyPrefixForTheRedisStoreAlone() {
		this.redisStore.withPropertyValues("idempotency.store.redis.key-prefix=idempotency:")
			.run((context) -> assertThat(context).hasNotFailed().hasSingleBean(RedisProcessedMessageStore.class));
	}

	@Test
	void warnsWhenTheCacheWouldOutliveTheDatabaseRetention(CapturedOutput output) {
		this.runner.withBean(LettuceConnectionFactory.class, () -> new LettuceConnectionFactory("127.0.0.1", 1))
			.withPropertyValues("idempotency.cache.ttl=10d", "idempotency.store.jdbc.retention=7d")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(output).contains("idempotency.cache.ttl (PT240H) exceeds idempotency.store.jdbc.retention");
			});
	}

	@Test
	void retriesInfrastructureFailuresUnlessSwitchedOff() {
		this.runner.run((context) -> assertThat(context).hasSingleBean(InfrastructureRetryInstaller.class));
		this.runner.withPropertyValues("idempotency.infrastructure-retry.enabled=false")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(InfrastructureRetryInstaller.class));
	}

	@Test
	void failsFastOnAnInfrastructureRetryThatWouldShrink() {
		assertRefusesProperty("idempotency.infrastructure-retry.multiplier=0.5",
				"idempotency.infrastructure-retry.multiplier must be at least 1");
	}

	@Test
	void failsFastOnABadDuration() {
		assertRefusesProperty("idempotency.cache.timeout=0s", "idempotency.cache.timeout must be positive");
	}

	@Test
	void failsFastOnATableNameThatIsNotAnIdentifier() {
		assertRefusesProperty("idempotency.store.jdbc.table=keys; DROP TABLE accounts",
				"Invalid idempotency.store.jdbc.table name 'keys; DROP TABLE accounts'");
	}

	@Test
	void failsFastOnAnIdempotentMethodThatIsNotAListener() {
		assertRefusesListener(NotAListener.class, "handle", "is not a @KafkaListener");
	}

	@Test
	void failsFastOnAKeyExpressionThatDoesNotParse() {
		assertRefusesListener(BadExpression.class, "on", "Invalid key expression 'payload.('");
	}

	@Test
	void failsFastOnABatchListenerWithAListOfHeaders() {
		assertRefusesListener(BatchListener.class, "on", "takes a list of headers");
	}

	@ParameterizedTest
	@ValueSource(classes = { FutureListener.class, StageListener.class, PublisherListener.class })
	void failsFastOnAnAsynchronousListener(Class<?> listener) {
		assertRefusesListener(listener, "on", "asynchronous");
	}

	@ParameterizedTest
	@ValueSource(classes = { AsyncListener.class, AsyncClassListener.class })
	void failsFastOnAnAsyncListener(Class<?> listener) {
		assertRefusesListener(listener, "on", "is @Async");
	}

	@ParameterizedTest
	@ValueSource(classes = { OwnTransactionListener.class, NoTransactionListener.class, OwnTransactionClassListener.class,
			JtaOwnTransactionListener.class, JtaNoTransactionListener.class })
	void failsFastOnAListenerWhoseOwnTransactionWouldNotJoinTheClaims(Class<?> listener) {
		assertRefusesListener(listener, "on", "apart from the claim");
	}

	@ParameterizedTest
	@ValueSource(classes = { JoiningListener.class, JtaJoiningListener.class, ClaimsManagerListener.class })
	void acceptsAListenerThatJoinsTheClaimsTransaction(Class<?> listener) {
		this.runner.withBean(listener)
			.withUserConfiguration(TwoTransactionManagers.class)
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void claimsThroughATransactionAwareDataSourceProxy() {
		this.runner.withUserConfiguration(TransactionAwareDataSource.class).run((context) -> {
			assertThat(context).hasNotFailed();
			ProcessedMessageStore store = context.getBean(ProcessedMessageStore.class);
			String key = java.util.UUID.randomUUID().toString();
			Claim claim = new org.springframework.transaction.support.TransactionTemplate(
					context.getBean(PlatformTransactionManager.class))
				.execute((status) -> store.claim(new ProcessedMessage("proxy", key, "t", 0, 0)));
			assertThat(claim).isEqualTo(Claim.NEW);
			assertThat(store.isProcessed("proxy", key)).isTrue();
		});
	}

	@Test
	void resolvesAPlaceholderInTheTransactionManagerAListenerNames() {
		this.runner.withBean(PlaceholderManagerListener.class)
			.withUserConfiguration(TwoTransactionManagers.class)
			.withPropertyValues("app.transaction-manager=transactionManager")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void failsFastOnAListenerWhoseTransactionNamesAnotherTransactionManager() {
		this.runner.withBean(OtherManagerListener.class)
			.withUserConfiguration(TwoTransactionManagers.class)
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasMessageContaining(OtherManagerListener.class.getName() + ".on")
				.hasMessageContaining("otherTransactionManager"));
	}

	@Test
	void failsFastOnAPrimaryJdbcTransactionManagerBesideTheClaimsJpaOneOnTheSameDataSource() {
		this.runner.withUserConfiguration(JpaAndPrimaryJdbcTransactionManagers.class)
			.withBean(JoiningListener.class)
			.withPropertyValues("idempotency.transaction-manager=transactionManager")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasMessageContaining("jdbcTransactionManager")
				.hasMessageContaining("same DataSource"));
	}

	@Test
	void warnsOfAJdbcTransactionManagerBesideTheClaimsPrimaryJpaOne(CapturedOutput output) {
		this.runner.withUserConfiguration(JpaAndJdbcTransactionManagers.class)
			.withBean(JoiningListener.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(output).contains("DataSourceTransactionManager 'jdbcTransactionManager' manages the same "
						+ "DataSource");
			});
	}

	@Test
	void acceptsAJdbcTransactionManagerBesideTheClaimsJpaOneWhenNoMethodIsIdempotent() {
		this.runner.withUserConfiguration(JpaAndJdbcTransactionManagers.class)
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void failsFastOnABatchListenerWithAMapOfHeaders() {
		assertRefusesListener(BatchHeadersListener.class, "on", "@Headers");
	}

	@Test
	void failsFastOnAPayloadBatchListenerWithAFilterOfItsOwn() {
		assertRefusesListener(FilteredPayloadBatchListener.class, "on", "filter");
	}

	@Test
	void failsFastWhenTheTransactionManagerManagesNoDataSource() {
		this.runner.withBean("transactionManager", PlatformTransactionManager.class, NoDataSourceTransactionManager::new)
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasMessageContaining("manages no DataSource"));
	}

	@Test
	void failsFastWhenAJpaTransactionManagerManagesAnotherDataSource() {
		this.runner.withBean("transactionManager", PlatformTransactionManager.class, () -> {
			// the EntityManagerFactory is beside the point: the check reads the DataSource
			JpaTransactionManager transactionManager = new JpaTransactionManager(
					Mockito.mock(EntityManagerFactory.class));
			transactionManager.setDataSource(new DriverManagerDataSource(TestInfrastructure.postgres().jdbcUrl(),
					TestInfrastructure.postgres().username(), TestInfrastructure.postgres().password()));
			return transactionManager;
		})
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasMessageContaining("manages another DataSource"));
	}

	@Test
	void failsFastWhenASecondDataSourceTransactionManagerIsChosen() {
		this.runner.withBean("otherTransactionManager", PlatformTransactionManager.class,
				() -> new DataSourceTransactionManager(new DriverManagerDataSource(
						TestInfrastructure.postgres().jdbcUrl(), TestInfrastructure.postgres().username(),
						TestInfrastructure.postgres().password())))
			.withPropertyValues("idempotency.transaction-manager=otherTransactionManager")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasMessageContaining("manages another DataSource"));
	}

	/**
	 * Assert that the application does not start with a listener bean, naming its method.
	 */
	private void assertRefusesListener(Class<?> listener, String method, String message) {
		this.runner.withBean(listener)
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.hasMessageContaining(listener.getName() + "." + method)
				.hasMessageContaining(message));
	}

	/**
	 * Assert that the application does not start with a property value, for the reason
	 * given.
	 */
	private void assertRefusesProperty(String property, String message) {
		this.runner.withPropertyValues(property)
			.run((context) -> assertThat(context).hasFailed().getFailure().rootCause().hasMessageContaining(message));
	}

	private static boolean tableExists(JdbcTemplate jdbc, String schema, String table) {
		return Boolean.TRUE.equals(jdbc.queryForObject(
				"SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?)",
				Boolean.class, schema, table));
	}

	@Configuration(proxyBeanMethods = false)
	static class CustomBeans {

		static final IdempotencyKeyResolver RESOLVER = (message) -> "constant";

		static final ProcessedMessageStore STORE = new ProcessedMessageStore() {

			@Override
			public Claim claim(ProcessedMessage message) {
				return Claim.NEW;
			}

			@Override
			public boolean isProcessed(String scope, String key) {
				return false;
			}

		};

		@Bean
		IdempotencyKeyResolver customResolver() {
			return RESOLVER;
		}

		@Bean
		ProcessedMessageStore customStore() {
			return STORE;
		}

	}

	static class NotAListener {

		@Idempotent
		public void handle(String payload) {
		}

	}

	static class BadExpression {

		@KafkaListener(topics = "t")
		@Idempotent(key = "payload.(")
		public void on(String payload) {
		}

	}

	static class PlainListener {

		@KafkaListener(topics = "t")
		@Idempotent
		public void on(String payload) {
		}

	}

	static class OwnTransactionListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@Transactional(propagation = Propagation.REQUIRES_NEW)
		public void on(String payload) {
		}

	}

	static class NoTransactionListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@Transactional(propagation = Propagation.NOT_SUPPORTED)
		public void on(String payload) {
		}

	}

	@Transactional(propagation = Propagation.REQUIRES_NEW)
	static class OwnTransactionClassListener {

		@KafkaListener(topics = "t")
		@Idempotent
		public void on(String payload) {
		}

	}

	static class JtaOwnTransactionListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@jakarta.transaction.Transactional(jakarta.transaction.Transactional.TxType.REQUIRES_NEW)
		public void on(String payload) {
		}

	}

	static class JtaNoTransactionListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@jakarta.transaction.Transactional(jakarta.transaction.Transactional.TxType.NOT_SUPPORTED)
		public void on(String payload) {
		}

	}

	static class JtaJoiningListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@jakarta.transaction.Transactional
		public void on(String payload) {
		}

	}

	static class OtherManagerListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@Transactional(transactionManager = "otherTransactionManager")
		public void on(String payload) {
		}

	}

	static class PlaceholderManagerListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@Transactional("${app.transaction-manager}")
		public void on(String payload) {
		}

	}

	static class ClaimsManagerListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@Transactional("transactionManager")
		public void on(String payload) {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TransactionAwareDataSource {

		@Bean
		DataSource dataSource() {
			return new org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy(new DriverManagerDataSource(
					TestInfrastructure.postgres().jdbcUrl(), TestInfrastructure.postgres().username(),
					TestInfrastructure.postgres().password()));
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoTransactionManagers {

		@Bean
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		// a second database's
		@Bean
		DataSourceTransactionManager otherTransactionManager() {
			return new DataSourceTransactionManager(new DriverManagerDataSource(
					TestInfrastructure.postgres().jdbcUrl(), TestInfrastructure.postgres().username(),
					TestInfrastructure.postgres().password()));
		}

	}

	// the EntityManagerFactory is beside the point: the checks read the DataSource
	static JpaTransactionManager jpaTransactionManager(DataSource dataSource) {
		JpaTransactionManager transactionManager = new JpaTransactionManager(Mockito.mock(EntityManagerFactory.class));
		transactionManager.setDataSource(dataSource);
		return transactionManager;
	}

	@Configuration(proxyBeanMethods = false)
	static class JpaAndPrimaryJdbcTransactionManagers {

		@Bean
		JpaTransactionManager transactionManager(DataSource dataSource) {
			return jpaTransactionManager(dataSource);
		}

		@Bean
		@org.springframework.context.annotation.Primary
		DataSourceTransactionManager jdbcTransactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

	}

	// a job repository's, say
	@Configuration(proxyBeanMethods = false)
	static class JpaAndJdbcTransactionManagers {

		@Bean
		@org.springframework.context.annotation.Primary
		JpaTransactionManager transactionManager(DataSource dataSource) {
			return jpaTransactionManager(dataSource);
		}

		@Bean
		DataSourceTransactionManager jdbcTransactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

	}

	static class JoiningListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@Transactional
		public void on(String payload) {
		}

	}

	static class AsyncListener {

		@KafkaListener(topics = "t")
		@Idempotent
		@Async
		public void on(String payload) {
		}

	}

	@Async
	static class AsyncClassListener {

		@KafkaListener(topics = "t")
		@Idempotent
		public void on(String payload) {
		}

	}

	static class FutureListener {

		@KafkaListener(topics = "t")
		@Idempotent
		public CompletableFuture<Void> on(String payload) {
			return CompletableFuture.completedFuture(null);
		}

	}

	static class StageListener {

		@KafkaListener(topics = "t")
		@Idempotent
		public CompletionStage<Void> on(String payload) {
			return CompletableFuture.completedFuture(null);
		}

	}

	static class PublisherListener {

		@KafkaListener(topics = "t")
		@Idempotent
		public Publisher<Void> on(String payload) {
			return (subscriber) -> {
			};
		}

	}

	static class BatchHeadersListener {

		@KafkaListener(topics = "t", batch = "true")
		@Idempotent
		public void on(List<ConsumerRecord<String, String>> records, @Headers Map<String, Object> headers) {
		}

	}

	static class FilteredPayloadBatchListener {

		@KafkaListener(topics = "t", batch = "true", filter = "someFilter")
		@Idempotent
		public void on(List<String> payloads) {
		}

	}

	/**
	 * A transaction manager of another resource than a DataSource, such as Kafka's.
	 */
	static class NoDataSourceTransactionManager extends AbstractPlatformTransactionManager
			implements ResourceTransactionManager {

		@Override
		public Object getResourceFactory() {
			return new Object();
		}

		@Override
		protected Object doGetTransaction() {
			return new Object();
		}

		@Override
		protected void doBegin(Object transaction, TransactionDefinition definition) {
		}

		@Override
		protected void doCommit(DefaultTransactionStatus status) {
		}

		@Override
		protected void doRollback(DefaultTransactionStatus status) {
		}

	}

	static class BatchListener {

		@KafkaListener(topics = "t", batch = "true")
		@Idempotent
		public void on(List<String> payloads, @Header(KafkaHeaders.OFFSET) List<Long> offsets) {
		}

	}

	static class LeaseListener {

		@KafkaListener(topics = "t")
		@Idempotent(mode = Idempotent.Mode.LEASE, storeResult = true)
		public String on(String payload) {
			return payload;
		}

	}

}
