package dev.idempotency.internal.consumer;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import javax.sql.DataSource;

import dev.idempotency.Idempotent;
import dev.idempotency.test.HeldKey;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestProxy;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.BatchListenerFailedException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Records that fail because the infrastructure is not there are delayed, never dropped:
 * with Spring Boot's default error handler (ten attempts without pause, then log and
 * commit), a database outage or a key held by another consumer that outlasts those
 * attempts must still end with every record applied once.
 */
class InfrastructureOutageIntegrationTests {

	private static final String TOPIC = "it-outage";

	private static final String BATCHES = "it-outage-batch";

	private static final TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();

	// the application's database, which a test can cut off
	private static final TestProxy database = new TestProxy(uri().getHost(), uri().getPort());

	// the database, not through the proxy
	private static final DataSource direct = new DriverManagerDataSource(postgres.jdbcUrl(), postgres.username(),
			postgres.password());

	private static final TestEffects effects = new TestEffects(new JdbcTemplate(direct), "outage_effects");

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Listener.class)
		.topics(TOPIC, BATCHES)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=outage_effects",
				"spring.datasource.url="
						+ postgres.jdbcUrl().replace(":" + uri().getPort() + "/", ":" + database.port() + "/"),
				// each attempt fails fast, so the default handler's ten attempts take well under a second
				"spring.datasource.hikari.connection-timeout=250", "spring.datasource.hikari.maximum-pool-size=2",
				"spring.kafka.consumer.fetch-max-wait=50ms", "idempotency.lock-timeout=100ms",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms");

	@AfterAll
	static void stop() {
		app.close();
		database.close();
	}

	@Test
	void recordsArrivingDuringADatabaseOutageAreAppliedOnceWhenItEnds() throws Exception {
		String run = UUID.randomUUID().toString();
		database.cut();
		try {
			for (int i = 0; i < 5; i++) {
				app.send(TOPIC, run + "-" + i, run + "-" + i);
			}
			// far longer than ten attempts of 250 ms
			Thread.sleep(8000);
		}
		finally {
			database.restore();
		}
		app.awaitCommitted("outage", TOPIC, Duration.ofSeconds(60));
		for (int i = 0; i < 5; i++) {
			assertThat(effects("outage", run + "-" + i)).as("effects of record %d", i).isEqualTo(1);
		}
	}

	@Test
	void recordWhoseKeyAnotherConsumerHoldsIsAppliedOnceTheHolderLetsGo() throws Exception {
		String key = UUID.randomUUID().toString();
		// another consumer's claim of the key, in a transaction that stays open
		try (HeldKey held = HeldKey.hold(direct, "outage", key)) {
			app.send(TOPIC, key, key);
			// far longer than ten claims that each give up after the 100 ms lock timeout
			Thread.sleep(8000);
			// the other consumer fails: its claim rolls back, so this record must be applied
		}
		app.awaitCommitted("outage", TOPIC, Duration.ofSeconds(60));
		await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(effects("outage", key)).isEqualTo(1));
	}

	@Test
	void batchArrivingDuringAnOutageIsAppliedOnceAndItsPoisonStillReachesTheErrorHandler() throws Exception {
		String run = UUID.randomUUID().toString();
		database.cut();
		try {
			for (String key : new String[] { "g1", "g2", "poison", "g3" }) {
				app.send(BATCHES, run + "-" + key, run + "-" + key);
			}
			Thread.sleep(3000);
		}
		finally {
			database.restore();
		}
		// the poison is a failure of the application: after the outage, the default error
		// handler retries it and gives it up, rather than retrying it without end
		app.awaitCommitted("outage-batch", BATCHES, Duration.ofSeconds(90));
		for (String key : new String[] { "g1", "g2", "g3" }) {
			assertThat(effects("outage-batch", run + "-" + key)).as("effects of %s", key).isEqualTo(1);
		}
		assertThat(effects("outage-batch", run + "-poison")).isZero();
	}

	private static URI uri() {
		return URI.create(postgres.jdbcUrl().substring("jdbc:".length()));
	}

	private static int effects(String listener, String key) {
		return effects.count(listener, key);
	}

	static class Listener extends RecordingListener {

		@KafkaListener(id = "outage-batch", topics = BATCHES, groupId = "outage-batch", batch = "true")
		@Idempotent
		public void batch(List<ConsumerRecord<String, String>> records) {
			for (int i = 0; i < records.size(); i++) {
				if (records.get(i).value().endsWith("-poison")) {
					throw new BatchListenerFailedException("Poison", i);
				}
				effects().add("outage-batch", records.get(i).value());
			}
		}

		@KafkaListener(id = "outage", topics = TOPIC, groupId = "outage")
		@Idempotent
		public void on(String payload) {
			effects().add("outage", payload);
		}

	}

}
