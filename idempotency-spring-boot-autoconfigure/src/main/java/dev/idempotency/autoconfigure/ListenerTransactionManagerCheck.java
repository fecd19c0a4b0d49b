package dev.idempotency.autoconfigure;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

import javax.sql.DataSource;

import dev.idempotency.internal.consumer.IdempotentMethods;
import dev.idempotency.store.ProcessedMessageStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.annotation.BeanFactoryAnnotationUtils;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionManager;
import org.springframework.transaction.annotation.AnnotationTransactionAttributeSource;
import org.springframework.transaction.interceptor.TransactionAttribute;
import org.springframework.transaction.interceptor.TransactionAttributeSource;
import org.springframework.util.StringUtils;

/**
 * Stops the application at start-up when the work of an {@code @Idempotent} listener
 * could commit apart from its claim through another transaction manager: the listener's
 * own {@code @Transactional} names another one, or a {@code DataSourceTransactionManager}
 * sits beside the claims' JPA (or other non-JDBC) transaction manager on the same
 * {@code DataSource}. The JPA transaction manager binds its connection to the
 * {@code DataSource} without marking a JDBC transaction active, so a
 * {@code @Transactional} method of the JDBC one, called from the listener, starts what it
 * takes for a new transaction on that very connection and commits it, claim included,
 * when it returns; a failure after that is skipped as a duplicate on the retry.
 */
final class ListenerTransactionManagerCheck implements BeanPostProcessor, SmartInitializingSingleton, BeanFactoryAware {

	private static final Log logger = LogFactory.getLog(ListenerTransactionManagerCheck.class);

	private final TransactionAttributeSource transactionAttributes = new AnnotationTransactionAttributeSource(false);

	private final Function<ListableBeanFactory, @Nullable PlatformTransactionManager> claimsTransactionManager;

	private final List<NamedManager> namedManagers = new ArrayList<>();

	private boolean idempotentMethods;

	private @Nullable ListableBeanFactory beanFactory;

	/**
	 * Create the check.
	 * @param claimsTransactionManager finds the transaction manager the claims run in
	 */
	ListenerTransactionManagerCheck(
			Function<ListableBeanFactory, @Nullable PlatformTransactionManager> claimsTransactionManager) {
		this.claimsTransactionManager = claimsTransactionManager;
	}

	@Override
	public void setBeanFactory(BeanFactory beanFactory) {
		this.beanFactory = (beanFactory instanceof ListableBeanFactory listable) ? listable : null;
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		for (Method method : IdempotentMethods.of(bean).keySet()) {
			this.idempotentMethods = true;
			TransactionAttribute attribute = this.transactionAttributes.getTransactionAttribute(method, targetClass);
			if (attribute != null && StringUtils.hasText(attribute.getQualifier())) {
				this.namedManagers.add(new NamedManager(targetClass.getName() + "." + method.getName(),
						attribute.getQualifier()));
			}
		}
		return bean;
	}

	@Override
	public void afterSingletonsInstantiated() {
		ListableBeanFactory beanFactory = this.beanFactory;
		if (!this.idempotentMethods || beanFactory == null) {
			return;
		}
		ProcessedMessageStore store = beanFactory.getBeanProvider(ProcessedMessageStore.class).getIfUnique();
		PlatformTransactionManager claims = this.claimsTransactionManager.apply(beanFactory);
		if (store == null || !store.joinsTransaction() || claims == null) {
			return;
		}
		for (NamedManager named : this.namedManagers) {
			checkNamedManager(beanFactory, named, claims);
		}
		DataSource dataSource = IdempotencyAutoConfiguration.managedDataSource(claims);
		if (dataSource != null && !(claims instanceof DataSourceTransactionManager)) {
			// what a @Transactional without a qualifier runs in
			TransactionManager unqualified = beanFactory.getBeanProvider(TransactionManager.class).getIfUnique();
			beanFactory.getBeansOfType(DataSourceTransactionManager.class, false, true).forEach((name, jdbc) -> {
				if (jdbc.getDataSource() == dataSource) {
					String hazard = "@Idempotent listeners claim their keys in transactions of "
							+ claims.getClass().getSimpleName() + ", and DataSourceTransactionManager '" + name
							+ "' manages the same DataSource: a @Transactional method of '" + name + "' called from "
							+ "a listener would commit the claim's connection, claim included, before the listener's "
							+ "work is done, and a later failure would lose the record. ";
					if (jdbc == unqualified) {
						throw new IllegalStateException(hazard + "It is the one every @Transactional without a "
								+ "qualifier runs in. Make the " + claims.getClass().getSimpleName() + " the primary "
								+ "transaction manager (it runs plain JDBC on its DataSource too)");
					}
					logger.warn(hazard + "Call no @Transactional(\"" + name + "\") code from @Idempotent listeners");
				}
			});
		}
	}

	private static void checkNamedManager(ListableBeanFactory beanFactory, NamedManager named,
			PlatformTransactionManager claims) {
		TransactionManager manager;
		// Spring resolves placeholders in the qualifier at run time
		String qualifier = (beanFactory instanceof ConfigurableBeanFactory configurable)
				? Objects.requireNonNullElse(configurable.resolveEmbeddedValue(named.qualifier()), named.qualifier())
				: named.qualifier();
		try {
			manager = BeanFactoryAnnotationUtils.qualifiedBeanOfType(beanFactory, TransactionManager.class, qualifier);
		}
		catch (BeansException ex) {
			throw new IllegalStateException("@Idempotent method " + named.method() + " is @Transactional on "
					+ "transaction manager '" + qualifier + "', which cannot be found: " + ex.getMessage(),
					ex);
		}
		if (manager != claims) {
			throw new IllegalStateException("@Idempotent method " + named.method() + " is @Transactional on "
					+ "transaction manager '" + qualifier + "', not on the one its claims run in ("
					+ claims.getClass().getSimpleName() + "): its work would commit apart from the claim and be "
					+ "applied again, or lost, on a retry. Remove the qualifier, or set "
					+ "idempotency.transaction-manager to '" + qualifier + "' if it manages the claims' "
					+ "DataSource");
		}
	}

	private record NamedManager(String method, String qualifier) {
	}

}
