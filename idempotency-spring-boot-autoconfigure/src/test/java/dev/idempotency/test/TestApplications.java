package dev.idempotency.test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

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

	private TestApplications() {
	}

	/**
	 * Start an application.
	 * @param configuration the application's configuration class
	 * @param properties extra properties, as {@code name=value}
	 * @return the running context
	 */
	public static ConfigurableApplicationContext run(Class<?> configuration, String... properties) {
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
		// Command-line arguments, so that they win over system properties (an embedded broker
		// publishes its address in spring.kafka.bootstrap-servers).
		for (String property : properties) {
			int equals = property.indexOf('=');
			defaults.put(property.substring(0, equals), property.substring(equals + 1));
		}
		List<String> arguments = new ArrayList<>();
		defaults.forEach((name, value) -> arguments.add("--" + name + "=" + value));
		return new SpringApplicationBuilder(configuration).web(WebApplicationType.NONE)
			.run(arguments.toArray(String[]::new));
	}

}
