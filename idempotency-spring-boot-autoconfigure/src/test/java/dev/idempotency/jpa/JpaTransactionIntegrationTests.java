package dev.idempotency.jpa;

import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestEffects;
import jakarta.persistence.EntityManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An {@code @Idempotent} listener that writes through JPA and JDBC in one transaction of
 * the application's {@link JpaTransactionManager}: both writes commit with the claim, or
 * roll back with it.
 */
class JpaTransactionIntegrationTests {

	private static final String TOPIC = "it-jpa";

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties("spring.jpa.hibernate.ddl-auto=update", "spring.jpa.open-in-view=false",
				"test.effects-table=jpa_jdbc_effects");

	@Test
	void runsOnTheJpaTransactionManager() {
		assertThat(app.bean(PlatformTransactionManager.class)).isInstanceOf(JpaTransactionManager.class);
	}

	@Test
	void commitsJpaAndJdbcWritesWithTheClaim() {
		String key = UUID.randomUUID().toString();
		app.send(TOPIC, "ok-" + key, key);
		app.send(TOPIC, "ok-" + key, key);
		app.awaitCommitted("jpa", TOPIC);
		assertThat(ledgerEntries("ok-" + key)).isEqualTo(1);
		assertThat(jdbcEffects("ok-" + key)).isEqualTo(1);
		assertThat(TestEffects.processedKeys(app.jdbc(), "jpa", key)).isEqualTo(1);
	}

	@Test
	void rollsBackJpaAndJdbcWritesWithTheClaim() {
		String key = UUID.randomUUID().toString();
		app.send(TOPIC, "fail-" + key, key);
		app.awaitCommitted("jpa", TOPIC);
		assertThat(ledgerEntries("fail-" + key)).isZero();
		assertThat(jdbcEffects("fail-" + key)).isZero();
		assertThat(TestEffects.processedKeys(app.jdbc(), "jpa", key)).isZero();
	}

	private static int ledgerEntries(String reference) {
		return app.rows("SELECT count(*) FROM jpa_ledger_entries WHERE reference = ?", reference);
	}

	private static int jdbcEffects(String reference) {
		return app.bean(TestEffects.class).count("jpa", reference);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Ledger.class)
	static class App {

		@Bean
		DefaultErrorHandler errorHandler() {
			return new DefaultErrorHandler(new FixedBackOff(0, 1));
		}

	}

	static class Ledger extends RecordingListener {

		private final EntityManager entityManager;

		Ledger(EntityManager entityManager) {
			this.entityManager = entityManager;
		}

		@KafkaListener(id = "jpa", topics = TOPIC, groupId = "jpa")
		@Idempotent
		public void on(String reference) {
			this.entityManager.persist(new LedgerEntry(reference));
			// send the JPA insert to the database now, so that a rollback has something to undo
			this.entityManager.flush();
			effects().add("jpa", reference);
			if (reference.startsWith("fail-")) {
				throw new IllegalStateException("Simulated failure after both writes");
			}
		}

	}

}
