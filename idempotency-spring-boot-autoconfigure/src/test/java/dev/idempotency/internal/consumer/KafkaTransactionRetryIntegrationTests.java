package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.UUID;

import javax.sql.DataSource;

import dev.idempotency.Idempotent;
import dev.idempotency.test.HeldKey;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
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

	private static final String[] PROPERTIES = { TestApplications.WITHOUT_JPA, "idempotency.lock-timeout=100ms",
			"idempotency.infrastructure-retry.initial-interval=100ms",
			"idempotency.infrastructure-retry.max-interval=500ms",
			"idempotency.transaction-manager=transactionManager", "test.effects-table=kafka_tx_retry_effects" };

	// with the default after-rollback processor
	@RegisterExtension
	static final TestApplication app = application(App.class, TOPIC, "kafka-tx-retry");

	// with an after-rollback processor that recovers a record after three attempts
	@RegisterExtension
	static final TestApplication recovering = application(RecoveringApp.class, RECOVERED, "kafka-tx-recovered");

	@Test
	void aRecordWhoseKeyIsHeldIsAppliedOnceTheHolderLetsGo() throws Exception {
		String key = UUID.randomUUID().toString();
		// another consumer's claim of the key, in a transaction that stays open
		try (HeldKey held = HeldKey.hold(app.jdbc().getDataSource(), "kafka-tx-retry", key)) {
			app.send(TOPIC, key, key);
			// far longer than the default after-rollback processor's ten claims that each give up after 100 ms
			Thread.sleep(6000);
			// then the other consumer fails: its claim rolls back, so this record must be applied
		}
		app.awaitCommitted("kafka-tx-retry", TOPIC, Duration.ofSeconds(60));
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(app.bean(TestEffects.class).count("kafka-tx", key)).isEqualTo(1));
	}

	@Test
	void aRecordWhoseKeyIsHeldNeverReachesTheAfterRollbackProcessorsRecoverer() throws Exception {
		RecordingBatches recoverer = recovering.bean(RecordingBatches.class);
		String key = UUID.randomUUID().toString();
		try (HeldKey held = HeldKey.hold(recovering.jdbc().getDataSource(), "kafka-tx-recovered", key)) {
			recovering.send(RECOVERED, key, key);
			// the processor's three attempts each give up after 100 ms
			Thread.sleep(4000);
		}
		recovering.awaitCommitted("kafka-tx-recovered", RECOVERED, Duration.ofSeconds(60));
		assertThat(recoverer.recovered()).isEmpty();
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(recovering.bean(TestEffects.class).count("kafka-tx", key)).isEqualTo(1));
	}

	/**
	 * An application whose listener reads a topic in a group, in Kafka transactions whose
	 * ids start with the group's name.
	 */
	private static TestApplication application(Class<?> configuration, String topic, String group) {
		return TestApplication.of(configuration)
			.topics(topic)
			.properties(PROPERTIES)
			.properties("spring.kafka.producer.transaction-id-prefix=" + group + "-", "test.topic=" + topic,
					"test.group=" + group);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Listener.class)
	static class App {

		// Spring Boot's own backs off when the Kafka transaction manager is there
		@Bean
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class RecoveringApp extends App {

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

	}

	static class Listener extends RecordingListener {

		@KafkaListener(id = "${test.group}", topics = "${test.topic}", groupId = "${test.group}")
		@Idempotent
		public void on(String payload) {
			effects().add("kafka-tx", payload);
		}

	}

}
