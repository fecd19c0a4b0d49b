package dev.idempotency.autoconfigure;

import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.util.ClassUtils;
import org.springframework.util.StringUtils;

/**
 * Runs the starter's migration after the application's own Flyway migration. The other
 * way round, the application's Flyway would find the starter's tables in a schema without
 * its history table and refuse to migrate.
 */
final class SchemaMigrationOrdering implements BeanFactoryPostProcessor {

	private static final String FLYWAY_INITIALIZER = "org.springframework.boot.flyway.autoconfigure.FlywayMigrationInitializer";

	private static final String MIGRATION_BEAN = "idempotencySchemaMigration";

	@Override
	public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {
		ClassLoader classLoader = beanFactory.getBeanClassLoader();
		if (!ClassUtils.isPresent(FLYWAY_INITIALIZER, classLoader)
				|| !beanFactory.containsBeanDefinition(MIGRATION_BEAN)) {
			return;
		}
		String[] initializers = beanFactory.getBeanNamesForType(ClassUtils.resolveClassName(FLYWAY_INITIALIZER,
				classLoader), true, false);
		if (initializers.length > 0) {
			BeanDefinition migration = beanFactory.getBeanDefinition(MIGRATION_BEAN);
			String[] dependsOn = migration.getDependsOn();
			migration.setDependsOn(StringUtils.concatenateStringArrays(dependsOn, initializers));
		}
	}

}
