package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestInfrastructure;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A listener that fails after its connection was killed under it: the rollback fails too,
 * and the error handler must see the listener's own failure, not the rollback's.
 */
class RollbackFailureIntegrationTests {

	private static final String TOPIC = "it-rollback-failure";

	// the application's own handler sees every failure here
	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=rollback_effects",
				"idempotency.infrastructure-retry.enabled=false");

	@Test
	void errorHandlerSeesTheListenersFailureWhenTheRollbackFailsToo() {
		String key = UUID.randomUUID().toString();
		Listener listener = app.bean(Listener.class);
		listener.killOnce(key);
		app.send(TOPIC, key, key);
		app.awaitCommitted("rollback-failure", TOPIC);
		assertThat(app.bean(TestEffects.class).count("rollback-failure", key)).isEqualTo(1);
		assertThat(listener.failures()).singleElement()
			.satisfies((failure) -> assertThat(NestedExceptionUtils.getMostSpecificCause(failure))
				.isInstanceOf(IllegalStateException.class)
				.hasMessage("Listener failed on a dead connection"));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			return new Listener(jdbc);
		}

		// the plain JDBC transaction manager, which reports a failed rollback as a
		// TransactionSystemException
		@Bean
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		DefaultErrorHandler errorHandler(Listener listener) {
			DefaultErrorHandler handler = new DefaultErrorHandler(new FixedBackOff(0, 3));
			handler.setRetryListeners((record, ex, attempt) -> listener.failed(ex));
			return handler;
		}

	}

	static class Listener extends RecordingListener {

		private final Set<String> killOnce = ConcurrentHashMap.newKeySet();

		private final List<Throwable> failures = new CopyOnWriteArrayList<>();

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "rollback-failure", topics = TOPIC, groupId = "rollback-failure")
		@Idempotent
		public void on(String value) {
			effects().add("rollback-failure", value);
			if (this.killOnce.remove(value)) {
				// as an operator's pg_terminate_backend or a failover would, then fail: the
				// rollback after this failure fails as well, on the dead connection
				Integer pid = this.jdbc.queryForObject("SELECT pg_backend_pid()", Integer.class);
				TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
				new JdbcTemplate(new DriverManagerDataSource(postgres.jdbcUrl(), postgres.username(),
						postgres.password()))
					.queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, pid);
				throw new IllegalStateException("Listener failed on a dead connection");
			}
		}

		public void killOnce(String value) {
			this.killOnce.add(value);
		}

		public void failed(Exception ex) {
			this.failures.add(ex);
		}

		public List<Throwable> failures() {
			return this.failures;
		}

	}

}
