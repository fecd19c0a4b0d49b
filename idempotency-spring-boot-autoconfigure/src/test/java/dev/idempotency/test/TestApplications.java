package dev.idempotency.test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Starts Spring Boot applications connected to the test servers.
 */
public final class TestApplications {

	/**
	 * Property that switches JPA off, so that the application runs on a plain JDBC
	 * transaction manager.
	 */
	public static final String WITHOUT_JPA = "spring.autoconfigure.exclude="
			+ "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration,"
			+ "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration";

	/**
	 * Property that switches the DataSource and JPA off, for an application without a
	 * database (on the Redis-only store).
	 */
	public static final String WITHOUT_DATABASE = "spring.autoconfigure.exclude="
			+ "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration,"
			+ "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration,"
			+ "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration";

	/**
	 * Property that runs the outbox relay, which test applications otherwise do not.
	 */
	public static final String WITH_RELAY = "idempotency.outbox.relay-enabled=true";

	/**
	 * The table of an application's {@link TestEffects} when {@value #EFFECTS_TABLE} does
	 * not name one.
	 */
	public static final String DEFAULT_EFFECTS_TABLE = "test_effects";

	/**
	 * Property that names the table of the application's {@link TestEffects}.
	 */
	public static final String EFFECTS_TABLE = "test.effects-table";

	private TestApplications() {
	}

	/**
	 * Start an application.
	 * @param configuration the application's configuration class
	 * @param properties extra properties, as {@code name=value}
	 * @return the running context
	 */
	public static ConfigurableApplicationContext run(Class<?> configuration, String... properties) {
		return run(new Class<?>[] { configuration }, properties);
	}

	/**
	 * Start an application of several sources, such as a configuration class and
	 * components. An application with a {@link JdbcTemplate} and no {@link TestEffects} of
	 * its own gets one, created when first used, in the table named by
	 * {@value #EFFECTS_TABLE} ({@value #DEFAULT_EFFECTS_TABLE} by default).
	 * @param sources the application's sources
	 * @param properties extra properties, as {@code name=value}
	 * @return the running context
	 */
	public static ConfigurableApplicationContext run(Class<?>[] sources, String... properties) {
		return run(WebApplicationType.NONE, sources, properties);
	}

	/**
	 * Start an application of a web type, as {@link #run(Class[], String...)} does; a
	 * servlet application listens on a random port ({@code local.server.port}).
	 * @param type the web application type
	 * @param sources the application's sources
	 * @param properties extra properties, as {@code name=value}
	 * @return the running context
	 */
	public static ConfigurableApplicationContext run(WebApplicationType type, Class<?>[] sources,
			String... properties) {
		Map<String, Object> defaults = new LinkedHashMap<>(TestInfrastructure.springProperties());
		defaults.put("spring.main.banner-mode", "off");
		// Redis is on the test classpath: without this, Spring Boot would connect the cache
		// to whatever Redis listens on the default port. Tests of the cache switch it on
		// with their own server.
		defaults.put("idempotency.cache.enabled", "false");
		// Every test application shares one outbox table: only the outbox tests run relays.
		defaults.put("idempotency.outbox.relay-enabled", "false");
		// Spring Boot's Flyway is on the test classpath for the test of an application with
		// migrations of its own; the other test applications have none.
		defaults.put("spring.flyway.enabled", "false");
		// The Prometheus registry is on the test classpath for the scrape test, which
		// switches it on; the other test applications keep the simple registry.
		defaults.put("management.prometheus.metrics.export.enabled", "false");
		defaults.put("spring.kafka.consumer.properties[session.timeout.ms]", "6000");
		defaults.put("spring.kafka.consumer.properties[heartbeat.interval.ms]", "500");
		defaults.put("server.port", "0");
		// Command-line arguments, so that they win over system properties (an embedded broker
		// publishes its address in spring.kafka.bootstrap-servers).
		for (String property : properties) {
			int equals = property.indexOf('=');
			defaults.put(property.substring(0, equals), property.substring(equals + 1));
		}
		List<String> arguments = new ArrayList<>();
		defaults.forEach((name, value) -> arguments.add("--" + name + "=" + value));
		return new SpringApplicationBuilder(sources).web(type)
			.initializers((context) -> context
				.addBeanFactoryPostProcessor((beanFactory) -> registerEffects(beanFactory, context.getEnvironment())))
			.run(arguments.toArray(String[]::new));
	}

	private static void registerEffects(ConfigurableListableBeanFactory beanFactory, Environment environment) {
		if (!(beanFactory instanceof BeanDefinitionRegistry registry)
				|| beanFactory.getBeanNamesForType(TestEffects.class, true, false).length > 0
				|| beanFactory.getBeanNamesForType(JdbcTemplate.class, true, false).length == 0) {
			return;
		}
		RootBeanDefinition effects = new RootBeanDefinition(TestEffects.class,
				() -> new TestEffects(beanFactory.getBean(JdbcTemplate.class),
						environment.getProperty(EFFECTS_TABLE, DEFAULT_EFFECTS_TABLE)));
		effects.setLazyInit(true);
		registry.registerBeanDefinition("testEffects", effects);
	}

}
