package dev.idempotency.internal.consumer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.test.HeldKey;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
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
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.KafkaListenerErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

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

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private static ConfigurableApplicationContext context;

	@BeforeAll
	static void start() {
		for (String topic : List.of("it-leh-app", "it-leh-held", "it-leh-rethrow")) {
			TestInfrastructure.createTopic(topic, 1);
		}
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA, "idempotency.lock-timeout=100ms",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=500ms");
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	/**
	 * The application's own failure, swallowed by its own handler: the claim and the work roll
	 * back, the offset is committed, the recoverer is never called. This documents
	 * spring-kafka's behaviour (the application decided so); it passes.
	 */
	@Test
	void applicationFailureSwallowedByTheListenerErrorHandlerIsCommittedUnapplied() {
		Probe probe = context.getBean(Probe.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send("it-leh-app", 0, "fail", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("leh-app", new TopicPartition("it-leh-app", 0), TIMEOUT);
		assertThat(probe.swallowed).filteredOn((ex) -> ex.getMessage().contains(".app("))
			.singleElement()
			.satisfies((ex) -> assertThat(ex).hasRootCauseInstanceOf(IllegalStateException.class));
		assertThat(probe.recovered).isEmpty();
		assertThat(effects(jdbc, key)).isZero();
		assertThat(claims(jdbc, "leh-app", key)).isZero();
	}

	/**
	 * A key held by another consumer (lock timeout 100 ms) is an infrastructure failure: the
	 * starter delays such a record, never gives it up. A handler that swallows failures must
	 * not get it, or the offset would be committed with the record never applied.
	 */
	@Test
	void keyHeldByAnotherConsumerIsNotLostBehindASwallowingListenerErrorHandler() throws Exception {
		Probe probe = context.getBean(Probe.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		int swallowedBefore = probe.swallowed.size();
		TopicPartition partition = new TopicPartition("it-leh-held", 0);
		try (HeldKey held = HeldKey.hold(jdbc.getDataSource(), "leh-held", key)) {
			TestKafka.send("it-leh-held", 0, "held", Map.of("X-Idempotency-Key", key));
			// several claims give up meanwhile
			Thread.sleep(3000);
			assertThat(probe.swallowed).hasSize(swallowedBefore);
			assertThat(TestKafka.committedOffset("leh-held", partition)).isLessThan(TestKafka.endOffset(partition));
		}
		TestKafka.awaitCommitted("leh-held", partition, TIMEOUT);
		await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> assertThat(effects(jdbc, key)).isEqualTo(1));
		assertThat(probe.swallowed).hasSize(swallowedBefore);
		assertThat(probe.recovered).isEmpty();
	}

	/**
	 * A listener error handler that rethrows, as control: it is not handed the held key
	 * either, and the record is applied once the key is free.
	 */
	@Test
	void keyHeldByAnotherConsumerIsAppliedLaterBehindARethrowingListenerErrorHandler() throws Exception {
		Probe probe = context.getBean(Probe.class);
		JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
		String key = UUID.randomUUID().toString();
		int rethrownBefore = probe.rethrown.size();
		HeldKey held = HeldKey.hold(jdbc.getDataSource(), "leh-rethrow", key);
		try {
			TestKafka.send("it-leh-rethrow", 0, "held", Map.of("X-Idempotency-Key", key));
			Thread.sleep(2000);
		}
		finally {
			held.close();
		}
		TestKafka.awaitCommitted("leh-rethrow", new TopicPartition("it-leh-rethrow", 0), TIMEOUT);
		await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> assertThat(effects(jdbc, key)).isEqualTo(1));
		assertThat(probe.recovered).isEmpty();
		assertThat(probe.rethrown).hasSize(rethrownBefore);
	}

	private static int effects(JdbcTemplate jdbc, String key) {
		return jdbc.queryForObject("SELECT count(*) FROM leh_effects WHERE message_key = ?", Integer.class, key);
	}

	private static int claims(JdbcTemplate jdbc, String scope, String key) {
		return jdbc.queryForObject(
				"SELECT count(*) FROM processed_messages WHERE consumer_group = ? AND idempotency_key = ?",
				Integer.class, scope, key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Probe probe() {
			return new Probe();
		}

		@Bean
		Listeners listeners(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS leh_effects (message_key TEXT NOT NULL)");
			return new Listeners(jdbc);
		}

		@Bean
		DefaultErrorHandler errorHandler(Probe probe) {
			return new DefaultErrorHandler((record, ex) -> probe.recovered.add(record.value()),
					new FixedBackOff(0, 2));
		}

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

		final List<Object> recovered = new CopyOnWriteArrayList<>();

	}

	static class Listeners {

		private final JdbcTemplate jdbc;

		Listeners(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

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
			this.jdbc.update("INSERT INTO leh_effects (message_key) VALUES (?)",
					new String(record.headers().lastHeader("X-Idempotency-Key").value(), StandardCharsets.UTF_8));
		}

	}

}
