package dev.idempotency.internal.consumer;

import java.net.URI;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestProxy;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
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

	private static TestProxy database;

	private static ConfigurableApplicationContext context;

	private static JdbcTemplate direct;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(TOPIC, 1);
		TestInfrastructure.createTopic(BATCHES, 1);
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		URI uri = URI.create(postgres.jdbcUrl().substring("jdbc:".length()));
		database = new TestProxy(uri.getHost(), uri.getPort());
		String proxied = postgres.jdbcUrl().replace(":" + uri.getPort() + "/", ":" + database.port() + "/");
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA, "spring.datasource.url=" + proxied,
				// each attempt fails fast, so the default handler's ten attempts take well under a second
				"spring.datasource.hikari.connection-timeout=250", "spring.datasource.hikari.maximum-pool-size=2", "spring.kafka.consumer.fetch-max-wait=50ms",
				"idempotency.lock-timeout=100ms", "idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms");
		direct = new JdbcTemplate(new DriverManagerDataSource(postgres.jdbcUrl(), postgres.username(),
				postgres.password()));
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
		if (database != null) {
			database.close();
		}
	}

	@Test
	void recordsArrivingDuringADatabaseOutageAreAppliedOnceWhenItEnds() throws Exception {
		String run = UUID.randomUUID().toString();
		database.cut();
		try {
			for (int i = 0; i < 5; i++) {
				TestKafka.send(TOPIC, 0, run + "-" + i, Map.of("X-Idempotency-Key", run + "-" + i));
			}
			// far longer than ten attempts of 250 ms
			Thread.sleep(8000);
		}
		finally {
			database.restore();
		}
		TestKafka.awaitCommitted("outage", new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
		for (int i = 0; i < 5; i++) {
			assertThat(effects(run + "-" + i)).as("effects of record %d", i).isEqualTo(1);
		}
	}

	@Test
	void recordWhoseKeyAnotherConsumerHoldsIsAppliedOnceTheHolderLetsGo() throws Exception {
		String key = UUID.randomUUID().toString();
		try (Connection holder = direct.getDataSource().getConnection()) {
			holder.setAutoCommit(false);
			try (Statement statement = holder.createStatement()) {
				// another consumer's claim of the key, in a transaction that stays open
				statement.executeUpdate("INSERT INTO processed_messages (consumer_group, idempotency_key) "
						+ "VALUES ('outage', '" + key + "')");
			}
			TestKafka.send(TOPIC, 0, key, Map.of("X-Idempotency-Key", key));
			// far longer than ten claims that each give up after the 100 ms lock timeout
			Thread.sleep(8000);
			// the other consumer fails: its claim rolls back, so this record must be applied
			holder.rollback();
		}
		TestKafka.awaitCommitted("outage", new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
		await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(effects(key)).isEqualTo(1));
	}

	@Test
	void batchArrivingDuringAnOutageIsAppliedOnceAndItsPoisonStillReachesTheErrorHandler() throws Exception {
		String run = UUID.randomUUID().toString();
		database.cut();
		try {
			for (String key : new String[] { "g1", "g2", "poison", "g3" }) {
				TestKafka.send(BATCHES, 0, run + "-" + key, Map.of("X-Idempotency-Key", run + "-" + key));
			}
			Thread.sleep(3000);
		}
		finally {
			database.restore();
		}
		// the poison is a failure of the application: after the outage, the default error
		// handler retries it and gives it up, rather than retrying it without end
		TestKafka.awaitCommitted("outage-batch", new TopicPartition(BATCHES, 0), Duration.ofSeconds(90));
		for (String key : new String[] { "g1", "g2", "g3" }) {
			assertThat(effects(run + "-" + key)).as("effects of %s", key).isEqualTo(1);
		}
		assertThat(effects(run + "-poison")).isZero();
	}

	private static int effects(String key) {
		return direct.queryForObject("SELECT count(*) FROM outage_effects WHERE message_key = ?", Integer.class,
				key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS outage_effects (id BIGSERIAL PRIMARY KEY, "
					+ "message_key TEXT NOT NULL)");
			return new Listener(jdbc);
		}

	}

	static class Listener {

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "outage-batch", topics = BATCHES, groupId = "outage-batch", batch = "true")
		@Idempotent
		public void batch(List<ConsumerRecord<String, String>> records) {
			for (int i = 0; i < records.size(); i++) {
				if (records.get(i).value().endsWith("-poison")) {
					throw new BatchListenerFailedException("Poison", i);
				}
				this.jdbc.update("INSERT INTO outage_effects (message_key) VALUES (?)", records.get(i).value());
			}
		}

		@KafkaListener(id = "outage", topics = TOPIC, groupId = "outage")
		@Idempotent
		public void on(String payload) {
			this.jdbc.update("INSERT INTO outage_effects (message_key) VALUES (?)", payload);
		}

	}

}
