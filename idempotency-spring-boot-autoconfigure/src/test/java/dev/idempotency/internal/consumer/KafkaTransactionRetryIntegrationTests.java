package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import javax.sql.DataSource;

import dev.idempotency.Idempotent;
import dev.idempotency.test.HeldKey;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DefaultAfterRollbackProcessor;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A container that runs its listener in a Kafka transaction hands a failed record to its
 * {@code AfterRollbackProcessor}, not to its error handler; a record failed by the
 * infrastructure must be delayed there too, not given up after the processor's attempts.
 */
class KafkaTransactionRetryIntegrationTests {

	private static final String TOPIC = "it-kafka-tx-retry";

	private static final String RECOVERED = "it-kafka-tx-recovered";

	private static ConfigurableApplicationContext context;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(TOPIC, 1);
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA, "idempotency.lock-timeout=100ms",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms",
				"spring.kafka.producer.transaction-id-prefix=kafka-tx-retry-",
				"idempotency.transaction-manager=transactionManager");
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void aRecordWhoseKeyIsHeldIsAppliedOnceTheHolderLetsGo() throws Exception {
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		// another consumer's claim of the key, in a transaction that stays open
		try (HeldKey held = HeldKey.hold(jdbc.getDataSource(), "kafka-tx-retry", key)) {
			TestKafka.send(TOPIC, 0, key, Map.of("X-Idempotency-Key", key));
			// far longer than the default after-rollback processor's ten claims that each give up after 100 ms
			Thread.sleep(6000);
			// then the other consumer fails: its claim rolls back, so this record must be applied
		}
		TestKafka.awaitCommitted("kafka-tx-retry", new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
		await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(jdbc.queryForObject(
				"SELECT count(*) FROM kafka_tx_retry_effects WHERE message_key = ?", Integer.class, key))
			.isEqualTo(1));
	}

	@Test
	void aRecordWhoseKeyIsHeldNeverReachesTheAfterRollbackProcessorsRecoverer() throws Exception {
		TestInfrastructure.createTopic(RECOVERED, 1);
		try (ConfigurableApplicationContext recovering = TestApplications.run(RecoveringApp.class,
				TestApplications.WITHOUT_JPA, "idempotency.lock-timeout=100ms",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms",
				"spring.kafka.producer.transaction-id-prefix=kafka-tx-recovered-",
				"idempotency.transaction-manager=transactionManager")) {
			JdbcTemplate jdbc = recovering.getBean(JdbcTemplate.class);
			RecordingBatches recoverer = recovering.getBean(RecordingBatches.class);
			String key = UUID.randomUUID().toString();
			try (HeldKey held = HeldKey.hold(jdbc.getDataSource(), "kafka-tx-recovered", key)) {
				TestKafka.send(RECOVERED, 0, key, Map.of("X-Idempotency-Key", key));
				// the processor's three attempts each give up after 100 ms
				Thread.sleep(4000);
			}
			TestKafka.awaitCommitted("kafka-tx-recovered", new TopicPartition(RECOVERED, 0), Duration.ofSeconds(60));
			assertThat(recoverer.recovered()).isEmpty();
			await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(jdbc.queryForObject(
					"SELECT count(*) FROM kafka_tx_retry_effects WHERE message_key = ?", Integer.class, key))
				.isEqualTo(1));
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class RecoveringApp {

		@Bean
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		RecordingBatches recoverer() {
			return new RecordingBatches();
		}

		// recovers a record after three attempts and commits its offset in the transaction
		@Bean
		DefaultAfterRollbackProcessor<Object, Object> afterRollbackProcessor(RecordingBatches recoverer,
				KafkaTemplate<Object, Object> template) {
			return new DefaultAfterRollbackProcessor<>(recoverer::recover, new FixedBackOff(0, 2), template, true);
		}

		@Bean
		RecoveringListener recoveringListener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS kafka_tx_retry_effects (message_key TEXT NOT NULL)");
			return new RecoveringListener(jdbc);
		}

	}

	static class RecoveringListener {

		private final JdbcTemplate jdbc;

		RecoveringListener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "kafka-tx-recovered", topics = RECOVERED, groupId = "kafka-tx-recovered")
		@Idempotent
		public void on(String payload) {
			this.jdbc.update("INSERT INTO kafka_tx_retry_effects (message_key) VALUES (?)", payload);
		}

	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		// Spring Boot's own backs off when the Kafka transaction manager is there
		@Bean
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS kafka_tx_retry_effects (message_key TEXT NOT NULL)");
			return new Listener(jdbc);
		}

	}

	static class Listener {

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "kafka-tx-retry", topics = TOPIC, groupId = "kafka-tx-retry")
		@Idempotent
		public void on(String payload) {
			this.jdbc.update("INSERT INTO kafka_tx_retry_effects (message_key) VALUES (?)", payload);
		}

	}

}
