package dev.idempotency.autoconfigure;

import java.util.List;

import dev.idempotency.StoredResultCodec;
import dev.idempotency.internal.store.JdbcProcessedMessageStore;
import dev.idempotency.internal.web.HandlerExceptions;
import dev.idempotency.internal.web.IdempotentHandlers;
import dev.idempotency.internal.web.IdempotentRequestFilter;
import dev.idempotency.internal.web.WebSettings;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessageStore;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.HandlerMapping;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

/**
 * Auto-configuration of {@code @Idempotent} Spring MVC handler methods: a filter that
 * claims each request's idempotency key in the JDBC store, runs the handler once, and
 * replays its stored response to retried requests. WebFlux is not supported: an
 * {@code @Idempotent} handler in a reactive application stops it at start-up.
 */
@AutoConfiguration(after = { IdempotencyAutoConfiguration.class, IdempotencyJdbcStoreAutoConfiguration.class },
		afterName = "org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration")
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass(DispatcherServlet.class)
@ConditionalOnBooleanProperty(name = "idempotency.enabled", matchIfMissing = true)
@ConditionalOnBooleanProperty(name = "idempotency.web.enabled", matchIfMissing = true)
@ConditionalOnBean(ProcessedMessageStore.class)
@EnableConfigurationProperties({ IdempotencyProperties.class, IdempotencyWebProperties.class })
public final class IdempotencyWebAutoConfiguration {

	@Bean
	IdempotentHandlers idempotentHandlers(IdempotencyWebProperties web, IdempotencyProperties properties) {
		return new IdempotentHandlers(settings(web, properties.lease()));
	}

	@Bean
	IdempotentRequestFilter idempotentRequestFilter(IdempotentHandlers handlers,
			IdempotencyWebProperties web, IdempotencyProperties properties,
			ObjectProvider<RequestMappingHandlerMapping> mappings, ObjectProvider<ProcessedMessageStore> store,
			ObjectProvider<StoredResultCodec> json, ObjectProvider<IdempotencyMetrics> metrics,
			ListableBeanFactory beanFactory) {
		return new IdempotentRequestFilter(handlers,
				() -> mappings.orderedStream().map(HandlerMapping.class::cast).toList(),
				settings(web, properties.lease()), () -> claims(store.getObject(), json.getIfUnique(),
						metrics.getIfAvailable(() -> IdempotencyMetrics.NONE), beanFactory, properties),
				web.filterOrder());
	}

	@Bean
	HandlerExceptions idempotentHandlerExceptions() {
		return new HandlerExceptions();
	}

	@Bean
	SmartInitializingSingleton idempotentHandlersCheck(IdempotentHandlers handlers, IdempotentRequestFilter filter,
			ObjectProvider<RequestMappingHandlerMapping> mappings) {
		// once every bean is defined: the handlers of lazy controllers too; a handler, store,
		// codec or transaction manager that cannot serve them stops the application now, not
		// on the first request
		return () -> {
			mappings.orderedStream().forEach(handlers::register);
			if (handlers.any()) {
				filter.prepare();
			}
		};
	}

	private static IdempotentRequestFilter.Claims claims(ProcessedMessageStore store, StoredResultCodec json,
			IdempotencyMetrics metrics, ListableBeanFactory beanFactory, IdempotencyProperties properties) {
		if (!(store instanceof JdbcProcessedMessageStore jdbc)) {
			throw new IllegalStateException("@Idempotent web handlers need the jdbc store (idempotency.store.type="
					+ "jdbc), whose claims join the handler's transaction; the application has the " + store.name()
					+ " store");
		}
		if (json == null) {
			throw new IllegalStateException("@Idempotent web handlers store their responses as JSON: they need "
					+ "Jackson on the classpath, or a StoredResultCodec bean");
		}
		PlatformTransactionManager transactionManager = IdempotencyAutoConfiguration.transactionManager(beanFactory,
				properties);
		if (transactionManager == null) {
			throw new IllegalStateException("@Idempotent web handlers need one PlatformTransactionManager on the "
					+ "application's DataSource; set idempotency.transaction-manager to the name of the one to use");
		}
		IdempotencyAutoConfiguration.checkSameDataSource(transactionManager, store, jdbc.dataSource());
		TransactionTemplate transactions = new TransactionTemplate(transactionManager);
		transactions.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		LeaseStore leases = jdbc.leases();
		return new IdempotentRequestFilter.Claims(jdbc.rows(), leases, transactions, json, metrics);
	}

	private static WebSettings settings(IdempotencyWebProperties web, IdempotencyProperties.Lease lease) {
		return new WebSettings(web.keyHeader(), web.missingKey() == IdempotencyWebProperties.MissingKey.REJECT,
				web.maxKeyLength(), web.maxRequestSize().toBytes(), web.maxResponseSize().toBytes(),
				List.copyOf(web.replayedHeaders()), List.copyOf(web.fingerprintHeaders()), web.storeClientErrors(),
				lease.duration());
	}

}
