package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.sql.DataSource;

import dev.idempotency.Idempotent;
import dev.idempotency.test.HeldKey;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A batch listener that fails with its own exception, and no index, is retried by the
 * application's error handler in a loop of its own ({@code FallbackBatchErrorHandler}). A
 * held key or an outage during those retries must not count against the application's
 * attempts: the batch is applied once the infrastructure is back, never handed to the
 * recoverer unapplied.
 */
class BatchRetryOutageIntegrationTests {

	private static final String TOPIC = "it-batch-retry-outage";

	@Test
	void aKeyHeldDuringTheApplicationsBatchRetriesDelaysTheBatch() throws Exception {
		TestInfrastructure.createTopic(TOPIC, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.lock-timeout=100ms", "idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms")) {
			Listener listener = context.getBean(Listener.class);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			String key = UUID.randomUUID().toString();
			// the first attempt fails on its own; then another consumer claims the key and
			// holds it through all the application's retries (3 × (50 ms + 100 ms))
			listener.failOnceThenHold(jdbc.getDataSource());
			TestKafka.send(TOPIC, 0, key, Map.of("X-Idempotency-Key", key));
			HeldKey held = listener.held().get(30, java.util.concurrent.TimeUnit.SECONDS);
			Thread.sleep(3000);
			held.close();
			TestKafka.awaitCommitted("batch-retry-outage", new TopicPartition(TOPIC, 0), Duration.ofSeconds(60));
			assertThat(listener.recovered()).isEmpty();
			await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(jdbc.queryForObject(
					"SELECT count(*) FROM batch_retry_outage_effects WHERE message_key = ?", Integer.class, key))
				.isEqualTo(1));
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS batch_retry_outage_effects (message_key TEXT NOT NULL)");
			return new Listener(jdbc);
		}

		@Bean
		DefaultErrorHandler errorHandler(Listener listener) {
			return new DefaultErrorHandler(listener::recover, new FixedBackOff(50, 3));
		}

	}

	static class Listener {

		private final JdbcTemplate jdbc;

		private final AtomicBoolean failOnce = new AtomicBoolean();

		private final CompletableFuture<HeldKey> held = new CompletableFuture<>();

		private final List<Object> recovered = new CopyOnWriteArrayList<>();

		private volatile DataSource holder;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		void failOnceThenHold(DataSource dataSource) {
			this.holder = dataSource;
			this.failOnce.set(true);
		}

		CompletableFuture<HeldKey> held() {
			return this.held;
		}

		List<Object> recovered() {
			return this.recovered;
		}

		void recover(ConsumerRecord<?, ?> record, Exception ex) {
			this.recovered.add(record.value());
		}

		@KafkaListener(id = "batch-retry-outage", topics = TOPIC, groupId = "batch-retry-outage", batch = "true")
		@Idempotent
		public void on(List<ConsumerRecord<String, String>> records) {
			if (this.failOnce.compareAndSet(true, false)) {
				String key = records.get(0).value();
				// waits for this attempt's claim to roll back, then holds the key
				CompletableFuture.runAsync(() -> {
					try {
						this.held.complete(HeldKey.hold(this.holder, "batch-retry-outage", key));
					}
					catch (Exception ex) {
						this.held.completeExceptionally(ex);
					}
				});
				throw new IllegalStateException("The application's own failure, with no index");
			}
			for (ConsumerRecord<String, String> record : records) {
				this.jdbc.update("INSERT INTO batch_retry_outage_effects (message_key) VALUES (?)", record.value());
			}
		}

	}

}
