package dev.idempotency.autoconfigure;

import java.lang.reflect.Method;
import java.util.Arrays;

import javax.sql.DataSource;

import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.LeaseLostHandler;
import dev.idempotency.internal.consumer.IdempotentListenerAdvisor;
import dev.idempotency.internal.consumer.JacksonStoredResultCodec;
import dev.idempotency.internal.consumer.LeaseInvoker;
import dev.idempotency.internal.consumer.LeaseModeValidator;
import dev.idempotency.internal.consumer.LeaseSettings;
import dev.idempotency.internal.consumer.TransactionalRows;
import dev.idempotency.StoredResultCodec;
import dev.idempotency.internal.consumer.IdempotentListenerInterceptor;
import dev.idempotency.internal.consumer.IdempotentMethodValidator;
import dev.idempotency.internal.consumer.InfrastructureRetryInstaller;
import dev.idempotency.internal.consumer.ListenerContainerFactoryPostProcessor;
import dev.idempotency.internal.consumer.ListenerErrorHandlerPostProcessor;
import dev.idempotency.internal.key.DefaultIdempotencyKeyResolver;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.internal.store.JdbcProcessedKeyLookup;
import dev.idempotency.internal.store.JdbcProcessedMessageStore;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessageStore;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.ResourceTransactionManager;
import org.springframework.transaction.support.TransactionOperations;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;
import org.springframework.util.backoff.ExponentialBackOff;

/**
 * Auto-configuration of {@code @Idempotent} Kafka listeners: the interceptor around
 * annotated methods, on whichever {@link ProcessedMessageStore} the application has (the
 * JDBC or Redis store the starter configures, or its own).
 */
@AutoConfiguration(afterName = {
		"org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
		"org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
		"org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
		"org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration" })
@ConditionalOnClass(KafkaListener.class)
@ConditionalOnBooleanProperty(name = "idempotency.enabled", matchIfMissing = true)
@ConditionalOnBean(ProcessedMessageStore.class)
@EnableConfigurationProperties(IdempotencyProperties.class)
@Import(IdempotencyAutoConfiguration.AutoProxyRegistrar.class)
public final class IdempotencyAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	IdempotencyKeyResolver idempotencyKeyResolver(IdempotencyProperties properties) {
		return new DefaultIdempotencyKeyResolver(properties.keyHeader());
	}

	@Bean
	@ConditionalOnMissingBean
	IdempotentListenerInterceptor idempotentListenerInterceptor(ProcessedMessageStore store,
			IdempotencyKeyResolver keyResolver, IdempotencyProperties properties, ListableBeanFactory beanFactory,
			ObjectProvider<DataSource> dataSource, ObjectProvider<IdempotencyMetrics> metrics,
			ObjectProvider<ProcessedKeyCache> cache, ObjectProvider<ObservationRegistry> observationRegistry,
			ObjectProvider<StoredResultCodec> resultCodec, ObjectProvider<LeaseLostHandler> leaseLostHandlers) {
		PlatformTransactionManager transactionManager = transactionManager(beanFactory, properties);
		TransactionOperations transactions;
		if (transactionManager != null) {
			checkSameDataSource(transactionManager, store, dataSource.getIfUnique());
			TransactionTemplate template = new TransactionTemplate(transactionManager);
			template.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
			transactions = template;
		}
		else if (store.joinsTransaction()) {
			throw new IllegalStateException("@Idempotent listeners on the " + store.name() + " store need one "
					+ "PlatformTransactionManager on the application's DataSource; found "
					+ Arrays.toString(beanFactory.getBeanNamesForType(PlatformTransactionManager.class))
					+ ". Set idempotency.transaction-manager to the name of the one to use.");
		}
		else {
			transactions = TransactionOperations.withoutTransaction();
		}
		ProcessedKeyCache keyCache = store.joinsTransaction() ? cache.getIfAvailable() : null;
		IdempotentListenerInterceptor interceptor = new IdempotentListenerInterceptor(store, keyResolver,
				properties.missingKey(), transactions, metrics.getIfAvailable(() -> IdempotencyMetrics.NONE), keyCache,
				observationRegistry.getIfUnique(() -> ObservationRegistry.NOOP),
				leaseInvoker(store, properties, resultCodec, leaseLostHandlers));
		if (keyCache == null && store instanceof JdbcProcessedMessageStore jdbc
				&& properties.store().jdbc().pollLookup()) {
			interceptor.setPollLookup(
					new JdbcProcessedKeyLookup(new JdbcTemplate(jdbc.dataSource()), properties.store().jdbc().tableName()));
		}
		if (store instanceof JdbcProcessedMessageStore jdbc) {
			interceptor.setTransactionalRows(
					new TransactionalRows(jdbc.rows(), leaseSettings(properties), resultCodec.getIfUnique()));
		}
		return interceptor;
	}

	private static @Nullable LeaseInvoker leaseInvoker(ProcessedMessageStore store, IdempotencyProperties properties,
			ObjectProvider<StoredResultCodec> resultCodec, ObjectProvider<LeaseLostHandler> leaseLostHandlers) {
		LeaseStore leases = store.leases();
		if (leases == null) {
			return null;
		}
		return new LeaseInvoker(leases, leaseSettings(properties), resultCodec.getIfUnique(),
				() -> leaseLostHandlers.orderedStream().toList());
	}

	private static LeaseSettings leaseSettings(IdempotencyProperties properties) {
		IdempotencyProperties.Lease lease = properties.lease();
		return new LeaseSettings(lease.duration(), lease.nonRetryable(), lease.fingerprintMismatch(),
				lease.maxResultSize().toBytes());
	}

	@Bean
	static LeaseModeValidator idempotencyLeaseModeValidator(ObjectProvider<ProcessedMessageStore> store,
			ObjectProvider<StoredResultCodec> resultCodec) {
		return new LeaseModeValidator(store, () -> resultCodec.getIfUnique() != null);
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(ObjectMapper.class)
	static class StoredResultConfiguration {

		@Bean
		@ConditionalOnMissingBean
		StoredResultCodec idempotencyStoredResultCodec(ObjectProvider<ObjectMapper> objectMapper) {
			return new JacksonStoredResultCodec(objectMapper.getIfUnique(() -> JsonMapper.builder().build()));
		}

	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static IdempotentListenerAdvisor idempotentListenerAdvisor(
			ObjectProvider<IdempotentListenerInterceptor> interceptor, Environment environment) {
		int order = Binder.get(environment)
			.bind("idempotency.advisor-order", Integer.class)
			.orElse(Integer.parseInt(IdempotencyProperties.DEFAULT_ADVISOR_ORDER));
		return new IdempotentListenerAdvisor(interceptor::getObject, order);
	}

	@Bean
	static ListenerContainerFactoryPostProcessor idempotencyListenerContainerFactoryPostProcessor(
			ObjectProvider<InfrastructureRetryInstaller> installers,
			ObjectProvider<IdempotentListenerInterceptor> interceptors) {
		return new ListenerContainerFactoryPostProcessor(installers, interceptors);
	}

	@Bean
	@ConditionalOnBooleanProperty(name = "idempotency.infrastructure-retry.enabled", matchIfMissing = true)
	static ListenerErrorHandlerPostProcessor idempotencyListenerErrorHandlerPostProcessor() {
		return new ListenerErrorHandlerPostProcessor();
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = "idempotency.infrastructure-retry.enabled", matchIfMissing = true)
	InfrastructureRetryInstaller idempotencyInfrastructureRetryInstaller(
			ObjectProvider<KafkaListenerEndpointRegistry> registries, IdempotencyProperties properties) {
		IdempotencyProperties.InfrastructureRetry retry = properties.infrastructureRetry();
		return new InfrastructureRetryInstaller(registries, () -> {
			ExponentialBackOff backOff = new ExponentialBackOff(retry.initialInterval().toMillis(), retry.multiplier());
			backOff.setMaxInterval(retry.maxInterval().toMillis());
			return backOff;
		});
	}

	@Bean
	static IdempotentMethodValidator idempotentMethodValidator(ApplicationContext context, Environment environment) {
		return new IdempotentMethodValidator(webHandlersUnsupported(context, environment));
	}

	/**
	 * Return why {@code @Idempotent} web handler methods cannot be intercepted in an
	 * application, or {@code null} if {@link IdempotencyWebAutoConfiguration} applies.
	 */
	private static @Nullable String webHandlersUnsupported(ApplicationContext context, Environment environment) {
		if (!Binder.get(environment).bind("idempotency.web.enabled", Boolean.class).orElse(true)) {
			return "idempotency.web.enabled is false";
		}
		ClassLoader classLoader = context.getClassLoader();
		if (!ClassUtils.isPresent("org.springframework.web.servlet.DispatcherServlet", classLoader)
				|| !ServletApplications.isServlet(context)) {
			return "@Idempotent web handlers need a Spring MVC (servlet) application: WebFlux and other web stacks "
					+ "are not supported";
		}
		return null;
	}

	/**
	 * Tells a servlet web application context, loaded only when spring-web is present.
	 */
	private static final class ServletApplications {

		static boolean isServlet(ApplicationContext context) {
			return ClassUtils.isPresent("org.springframework.web.context.WebApplicationContext",
					context.getClassLoader())
					&& context instanceof org.springframework.web.context.WebApplicationContext;
		}

	}

	@Bean
	static BeanPostProcessor idempotentListenerTransactionManagerCheck(
			ObjectProvider<IdempotencyProperties> properties) {
		return new ListenerTransactionManagerCheck(
				(beanFactory) -> transactionManager(beanFactory, properties.getObject()));
	}

	static @Nullable PlatformTransactionManager transactionManager(ListableBeanFactory beanFactory,
			IdempotencyProperties properties) {
		if (properties.transactionManager() != null) {
			return beanFactory.getBean(properties.transactionManager(), PlatformTransactionManager.class);
		}
		PlatformTransactionManager transactionManager = beanFactory.getBeanProvider(PlatformTransactionManager.class)
			.getIfUnique();
		if (transactionManager == null && beanFactory.containsBean("transactionManager")) {
			transactionManager = beanFactory.getBean("transactionManager", PlatformTransactionManager.class);
		}
		return transactionManager;
	}

	static void checkSameDataSource(PlatformTransactionManager transactionManager,
			ProcessedMessageStore store, @Nullable DataSource dataSource) {
		if (!store.joinsTransaction()) {
			return;
		}
		DataSource storeDataSource = (store instanceof JdbcProcessedMessageStore jdbc) ? jdbc.dataSource() : dataSource;
		if (storeDataSource == null) {
			return;
		}
		DataSource managed = managedDataSource(transactionManager);
		String name = transactionManager.getClass().getSimpleName();
		if (managed == null) {
			throw new IllegalStateException("The transaction manager of @Idempotent listeners (" + name + ") manages "
					+ "no DataSource, so claims would commit on their own, apart from the listener's work. Set "
					+ "idempotency.transaction-manager to the transaction manager of the application's DataSource "
					+ "(a DataSourceTransactionManager, JdbcTransactionManager or JpaTransactionManager).");
		}
		if (managed != JdbcProcessedMessageStore.transactionResource(storeDataSource)) {
			throw new IllegalStateException("The transaction manager of @Idempotent listeners (" + name + ") manages "
					+ "another DataSource than the one the processed-message store uses, so claims would not "
					+ "commit with the listener's work. Set idempotency.transaction-manager to the one for the "
					+ "application's DataSource.");
		}
	}

	/**
	 * Return the {@code DataSource} whose connections the transaction manager binds to its
	 * transactions: the resource of a {@code DataSourceTransactionManager}, the
	 * {@code getDataSource()} of a JPA or Hibernate one; {@code null} when it has none
	 * (Kafka, JTA).
	 */
	static @Nullable DataSource managedDataSource(PlatformTransactionManager transactionManager) {
		if (transactionManager instanceof ResourceTransactionManager resourceTransactionManager
				&& resourceTransactionManager.getResourceFactory() instanceof DataSource resource) {
			return resource;
		}
		Method getter = ReflectionUtils.findMethod(transactionManager.getClass(), "getDataSource");
		if (getter != null && DataSource.class.isAssignableFrom(getter.getReturnType())) {
			return (DataSource) ReflectionUtils.invokeMethod(getter, transactionManager);
		}
		return null;
	}

	/**
	 * Makes sure an auto-proxy creator exists to apply the advisor, for applications that
	 * disabled Spring Boot's AOP auto-configuration.
	 */
	static class AutoProxyRegistrar implements ImportBeanDefinitionRegistrar {

		@Override
		public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
			AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
		}

	}

}
