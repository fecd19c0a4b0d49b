package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

import dev.idempotency.Idempotent;
import dev.idempotency.test.HeldKey;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestThreads;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
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

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=batch_retry_outage_effects",
				"idempotency.lock-timeout=100ms",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms");

	@Test
	void aKeyHeldDuringTheApplicationsBatchRetriesDelaysTheBatch() throws Exception {
		Listener listener = app.bean(Listener.class);
		String key = UUID.randomUUID().toString();
		// the first attempt fails on its own; then another consumer claims the key and
		// holds it through all the application's retries (3 × (50 ms + 100 ms))
		listener.failOnceThenHold(app.jdbc().getDataSource());
		app.send(TOPIC, key, key);
		HeldKey held = listener.held().get(30, TimeUnit.SECONDS);
		Thread.sleep(3000);
		held.close();
		app.awaitCommitted("batch-retry-outage", TOPIC, Duration.ofSeconds(60));
		assertThat(listener.recovered()).isEmpty();
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(app.bean(TestEffects.class).count("batch-retry-outage", key)).isEqualTo(1));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Listener.class)
	static class App {

		@Bean
		DefaultErrorHandler errorHandler(Listener listener) {
			return new DefaultErrorHandler(listener::recover, new FixedBackOff(50, 3));
		}

	}

	static class Listener extends RecordingListener {

		private final AtomicBoolean failOnce = new AtomicBoolean();

		private final CompletableFuture<HeldKey> held = new CompletableFuture<>();

		private final List<Object> recovered = new CopyOnWriteArrayList<>();

		private volatile DataSource holder;

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
				TestThreads.runAsync(() -> {
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
				effects().add("batch-retry-outage", record.value());
			}
		}

	}

}
