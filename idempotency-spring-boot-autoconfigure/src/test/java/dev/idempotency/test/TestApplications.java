package dev.idempotency.test;

import java.util.LinkedHashMap;
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
		defaults.put("spring.kafka.consumer.properties[session.timeout.ms]", "6000");
		defaults.put("spring.kafka.consumer.properties[heartbeat.interval.ms]", "500");
		return new SpringApplicationBuilder(configuration).web(WebApplicationType.NONE)
			.properties(defaults)
			.properties(properties)
			.run();
	}

}
