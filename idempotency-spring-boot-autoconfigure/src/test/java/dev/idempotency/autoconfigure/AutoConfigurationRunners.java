package dev.idempotency.autoconfigure;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import dev.idempotency.test.TestInfrastructure;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Context runners of the auto-configuration tests: the auto-configurations under test
 * with Spring Boot's DataSource (and Kafka) ones, connected to the test servers.
 */
final class AutoConfigurationRunners {

	private AutoConfigurationRunners() {
	}

	/**
	 * A runner of auto-configurations on Spring Boot's DataSource and its transaction
	 * manager, connected to the test PostgreSQL.
	 * @param autoConfigurations the auto-configurations under test
	 * @return the runner
	 */
	static ApplicationContextRunner onTheTestDatabase(Class<?>... autoConfigurations) {
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(with(autoConfigurations, DataSourceAutoConfiguration.class,
					DataSourceTransactionManagerAutoConfiguration.class)))
			.withPropertyValues("spring.datasource.url=" + postgres.jdbcUrl(),
					"spring.datasource.username=" + postgres.username(),
					"spring.datasource.password=" + postgres.password());
	}

	/**
	 * A runner of auto-configurations on Spring Boot's DataSource, its transaction manager
	 * and Kafka, connected to the test PostgreSQL and Kafka broker.
	 * @param autoConfigurations the auto-configurations under test
	 * @return the runner
	 */
	static ApplicationContextRunner onTheTestServers(Class<?>... autoConfigurations) {
		return onTheTestDatabase(with(autoConfigurations, KafkaAutoConfiguration.class))
			.withPropertyValues("spring.kafka.bootstrap-servers=" + TestInfrastructure.kafkaBootstrapServers());
	}

	private static Class<?>[] with(Class<?>[] autoConfigurations, Class<?>... more) {
		List<Class<?>> all = new ArrayList<>(Arrays.asList(more));
		all.addAll(Arrays.asList(autoConfigurations));
		return all.toArray(Class<?>[]::new);
	}

}
