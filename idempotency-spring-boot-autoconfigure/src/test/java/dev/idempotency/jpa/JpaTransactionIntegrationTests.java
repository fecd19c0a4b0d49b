package dev.idempotency.jpa;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import jakarta.persistence.EntityManager;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * An {@code @Idempotent} listener that writes through JPA and JDBC in one transaction of
 * the application's {@link JpaTransactionManager}: both writes commit with the claim, or
 * roll back with it.
 */
class JpaTransactionIntegrationTests {

	private static final String TOPIC = "it-jpa";

	private static ConfigurableApplicationContext context;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(TOPIC, 1);
		context = TestApplications.run(App.class, "spring.jpa.hibernate.ddl-auto=update",
				"spring.jpa.open-in-view=false");
		jdbc = context.getBean(JdbcTemplate.class);
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void runsOnTheJpaTransactionManager() {
		assertThat(context.getBean(PlatformTransactionManager.class)).isInstanceOf(JpaTransactionManager.class);
	}

	@Test
	void commitsJpaAndJdbcWritesWithTheClaim() {
		String key = UUID.randomUUID().toString();
		TestKafka.send(TOPIC, 0, "ok-" + key, Map.of("X-Idempotency-Key", key));
		TestKafka.send(TOPIC, 0, "ok-" + key, Map.of("X-Idempotency-Key", key));
		awaitConsumed();
		assertThat(rows("jpa_ledger_entries", "ok-" + key)).isEqualTo(1);
		assertThat(rows("jpa_jdbc_effects", "ok-" + key)).isEqualTo(1);
		assertThat(claimed(key)).isEqualTo(1);
	}

	@Test
	void rollsBackJpaAndJdbcWritesWithTheClaim() {
		String key = UUID.randomUUID().toString();
		TestKafka.send(TOPIC, 0, "fail-" + key, Map.of("X-Idempotency-Key", key));
		awaitConsumed();
		assertThat(rows("jpa_ledger_entries", "fail-" + key)).isZero();
		assertThat(rows("jpa_jdbc_effects", "fail-" + key)).isZero();
		assertThat(claimed(key)).isZero();
	}

	private static void awaitConsumed() {
		TestKafka.awaitCommitted("jpa", new TopicPartition(TOPIC, 0), Duration.ofSeconds(30));
	}

	private static int rows(String table, String reference) {
		return jdbc.queryForObject("SELECT count(*) FROM " + table + " WHERE reference = ?", Integer.class,
				reference);
	}

	private static int claimed(String key) {
		return jdbc.queryForObject(
				"SELECT count(*) FROM processed_messages WHERE consumer_group = 'jpa' AND idempotency_key = ?",
				Integer.class, key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Ledger ledger(EntityManager entityManager, JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS jpa_jdbc_effects (id BIGSERIAL PRIMARY KEY, "
					+ "reference TEXT NOT NULL)");
			return new Ledger(entityManager, jdbc);
		}

		@Bean
		DefaultErrorHandler errorHandler() {
			return new DefaultErrorHandler(new FixedBackOff(0, 1));
		}

	}

	static class Ledger {

		private final EntityManager entityManager;

		private final JdbcTemplate jdbc;

		Ledger(EntityManager entityManager, JdbcTemplate jdbc) {
			this.entityManager = entityManager;
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "jpa", topics = TOPIC, groupId = "jpa")
		@Idempotent
		public void on(String reference) {
			this.entityManager.persist(new LedgerEntry(reference));
			// send the JPA insert to the database now, so that a rollback has something to undo
			this.entityManager.flush();
			this.jdbc.update("INSERT INTO jpa_jdbc_effects (reference) VALUES (?)", reference);
			if (reference.startsWith("fail-")) {
				throw new IllegalStateException("Simulated failure after both writes");
			}
		}

	}

}
