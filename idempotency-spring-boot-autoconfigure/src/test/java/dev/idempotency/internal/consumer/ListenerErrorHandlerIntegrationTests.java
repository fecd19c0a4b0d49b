package dev.idempotency.internal.consumer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.consumer.ListenerFixtures.Recovered;
import dev.idempotency.internal.consumer.ListenerFixtures.RecoveringErrorHandler;
import dev.idempotency.test.HeldKey;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.KafkaListenerErrorHandler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * An {@code @Idempotent} listener with a {@link KafkaListenerErrorHandler} (the
 * {@code errorHandler} attribute of {@code @KafkaListener}) that logs and returns:
 * spring-kafka hands it the listener's failures before the container's error handler, and
 * commits the offset when it returns. The application's own failures are its to drop; a
 * failure of the infrastructure is delayed by the starter as without such a handler.
 */
class ListenerErrorHandlerIntegrationTests {

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics("it-leh-app", "it-leh-held", "it-leh-rethrow")
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=leh_effects", "test.error-handler.retries=2",
				"idempotency.lock-timeout=100ms", "idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms");

	/**
	 * The application's own failure, swallowed by its own handler: the claim and the work roll
	 * back, the offset is committed, the recoverer is never called. This documents
	 * spring-kafka's behaviour (the application decided so); it passes.
	 */
	@Test
	void applicationFailureSwallowedByTheListenerErrorHandlerIsCommittedUnapplied() {
		Probe probe = app.bean(Probe.class);
		JdbcTemplate jdbc = app.jdbc();
		String key = UUID.randomUUID().toString();
		app.send("it-leh-app", "fail", key);
		app.awaitCommitted("leh-app", "it-leh-app");
		assertThat(probe.swallowed).filteredOn((ex) -> ex.getMessage().contains(".app("))
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasRootCauseInstanceOf(IllegalStateException.class));
		assertThat(app.bean(Recovered.class).failures).isEmpty();
		assertThat(effects(key)).isZero();
		assertThat(TestEffects.processedKeys(jdbc, "leh-app", key)).isZero();
	}

	/**
	 * A key held by another consumer (lock timeout 100 ms) is an infrastructure failure: the
	 * starter delays such a record, never gives it up. A handler that swallows failures must
	 * not get it, or the offset would be committed with the record never applied.
	 */
	@Test
	void keyHeldByAnotherConsumerIsNotLostBehindASwallowingListenerErrorHandler() throws Exception {
		Probe probe = app.bean(Probe.class);
		JdbcTemplate jdbc = app.jdbc();
		String key = UUID.randomUUID().toString();
		int swallowedBefore = probe.swallowed.size();
		TopicPartition partition = new TopicPartition("it-leh-held", 0);
		try (HeldKey held = HeldKey.hold(jdbc.getDataSource(), "leh-held", key)) {
			app.send("it-leh-held", "held", key);
			// several claims give up meanwhile
			Thread.sleep(3000);
			assertThat(probe.swallowed).hasSize(swallowedBefore);
			assertThat(TestKafka.committedOffset("leh-held", partition)).isLessThan(TestKafka.endOffset(partition));
		}
		app.awaitCommitted("leh-held", "it-leh-held");
		await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> assertThat(effects(key)).isEqualTo(1));
		assertThat(probe.swallowed).hasSize(swallowedBefore);
		assertThat(app.bean(Recovered.class).failures).isEmpty();
	}

	/**
	 * A listener error handler that rethrows, as control: it is not handed the held key
	 * either, and the record is applied once the key is free.
	 */
	@Test
	void keyHeldByAnotherConsumerIsAppliedLaterBehindARethrowingListenerErrorHandler() throws Exception {
		Probe probe = app.bean(Probe.class);
		JdbcTemplate jdbc = app.jdbc();
		String key = UUID.randomUUID().toString();
		int rethrownBefore = probe.rethrown.size();
		HeldKey held = HeldKey.hold(jdbc.getDataSource(), "leh-rethrow", key);
		try {
			app.send("it-leh-rethrow", "held", key);
			Thread.sleep(2000);
		}
		finally {
			held.close();
		}
		app.awaitCommitted("leh-rethrow", "it-leh-rethrow");
		await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> assertThat(effects(key)).isEqualTo(1));
		assertThat(app.bean(Recovered.class).failures).isEmpty();
		assertThat(probe.rethrown).hasSize(rethrownBefore);
	}

	// the effects of a key, by any of the listeners
	private static int effects(String key) {
		return app.bean(TestEffects.class).count("leh", key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ Probe.class, Listeners.class, RecoveringErrorHandler.class })
	static class App {

		// logs and returns: the typical "log and move on" handler
		@Bean
		SwallowingHandler swallow(Probe probe) {
			return new SwallowingHandler(probe);
		}

		// the handler stays injectable as its own class
		@Bean
		Object swallowUser(SwallowingHandler swallow) {
			return swallow;
		}

		@Bean
		KafkaListenerErrorHandler rethrow(Probe probe) {
			return (message, ex) -> {
				probe.rethrown.add(ex);
				throw ex;
			};
		}

	}

	static class SwallowingHandler implements KafkaListenerErrorHandler {

		private final Probe probe;

		SwallowingHandler(Probe probe) {
			this.probe = probe;
		}

		@Override
		public Object handleError(org.springframework.messaging.Message<?> message,
				org.springframework.kafka.listener.ListenerExecutionFailedException exception) {
			this.probe.swallowed.add(exception);
			return null;
		}

	}

	static class Probe {

		final List<Throwable> swallowed = new CopyOnWriteArrayList<>();

		final List<Throwable> rethrown = new CopyOnWriteArrayList<>();

	}

	static class Listeners extends RecordingListener {

		@KafkaListener(id = "leh-app", topics = "it-leh-app", groupId = "leh-app", errorHandler = "swallow")
		@Idempotent
		public void app(ConsumerRecord<String, String> record) {
			apply(record);
			throw new IllegalStateException("The application's own failure");
		}

		@KafkaListener(id = "leh-held", topics = "it-leh-held", groupId = "leh-held", errorHandler = "swallow")
		@Idempotent
		public void held(ConsumerRecord<String, String> record) {
			apply(record);
		}

		@KafkaListener(id = "leh-rethrow", topics = "it-leh-rethrow", groupId = "leh-rethrow",
				errorHandler = "rethrow")
		@Idempotent
		public void rethrow(ConsumerRecord<String, String> record) {
			apply(record);
		}

		private void apply(ConsumerRecord<String, String> record) {
			effects().add("leh",
					new String(record.headers().lastHeader(TestApplication.KEY_HEADER).value(), StandardCharsets.UTF_8));
		}

	}

}
