package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.IdempotencyClaimFailedException;
import dev.idempotency.IdempotencyResultNotStoredException;
import dev.idempotency.Idempotent;
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
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Lease mode stores a listener's result (JSON) and its non-retryable failure (text) with
 * its claim. When the result or the text cannot be stored (a NUL character, which
 * PostgreSQL's {@code jsonb} and {@code text} refuse; a result the codec cannot write),
 * the claim must still end COMPLETED or FAILED: a claim left IN_PROGRESS is taken over once
 * its lease expires, and the effect outside the database runs again.
 */
class LeaseUnstorableTextIntegrationTests {

	private static final String RESULT_TOPIC = "it-lease-nul-result";

	private static final String UNWRITABLE_TOPIC = "it-lease-unwritable-result";

	private static final String FAILURE_TOPIC = "it-lease-nul-failure";

	private static ConfigurableApplicationContext context;

	@BeforeAll
	static void start() {
		TestInfrastructure.createTopic(RESULT_TOPIC, 1);
		TestInfrastructure.createTopic(UNWRITABLE_TOPIC, 1);
		TestInfrastructure.createTopic(FAILURE_TOPIC, 1);
		context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=300ms");
	}

	@AfterAll
	static void stop() {
		if (context != null) {
			context.close();
		}
	}

	@Test
	void aResultTheDatabaseRefusesCompletesTheClaimWithoutItAndACopyIsNotRunAgain() throws Exception {
		Probe probe = context.getBean(Probe.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send(RESULT_TOPIC, 0, "charge card 42\u0000", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("lease-nul-result", new TopicPartition(RESULT_TOPIC, 0), Duration.ofSeconds(30));
		await().atMost(Duration.ofSeconds(10)).until(() -> !probe.recovered("lease-nul-result").isEmpty());
		assertThat(status("lease-nul-result", key)).isEqualTo("COMPLETED");
		assertThat(probe.recovered("lease-nul-result")).singleElement()
			.isInstanceOf(IdempotencyResultNotStoredException.class);
		// a copy of the message once the lease (1 s) has passed
		Thread.sleep(1500);
		TestKafka.send(RESULT_TOPIC, 0, "charge card 42\u0000", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("lease-nul-result", new TopicPartition(RESULT_TOPIC, 0), Duration.ofSeconds(30));
		assertThat(probe.invocations("lease-nul-result")).as("card charges for one message").hasSize(1);
	}

	@Test
	void aResultTheCodecCannotWriteCompletesTheClaimWithoutItAndIsNotRunAgain() throws Exception {
		Probe probe = context.getBean(Probe.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send(UNWRITABLE_TOPIC, 0, "card 43", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("lease-unwritable-result", new TopicPartition(UNWRITABLE_TOPIC, 0),
				Duration.ofSeconds(30));
		// long enough for the error handler's retries, each after a lease
		Thread.sleep(4000);
		assertThat(probe.invocations("lease-unwritable-result")).as("card charges for one record").hasSize(1);
		assertThat(status("lease-unwritable-result", key)).isEqualTo("COMPLETED");
		assertThat(probe.recovered("lease-unwritable-result")).singleElement()
			.isInstanceOf(IdempotencyResultNotStoredException.class);
	}

	@Test
	void aNonRetryableFailureWhoseTextTheDatabaseRefusesMarksTheClaimFailedAndGoesToTheRecovererOnce()
			throws Exception {
		Probe probe = context.getBean(Probe.class);
		String key = UUID.randomUUID().toString();
		TestKafka.send(FAILURE_TOPIC, 0, "card 44", Map.of("X-Idempotency-Key", key));
		TestKafka.awaitCommitted("lease-nul-failure", new TopicPartition(FAILURE_TOPIC, 0), Duration.ofSeconds(30));
		Thread.sleep(4000);
		assertThat(probe.invocations("lease-nul-failure")).as("invocations for one record").hasSize(1);
		assertThat(status("lease-nul-failure", key)).isEqualTo("FAILED");
		assertThat(probe.recovered("lease-nul-failure")).singleElement()
			.isInstanceOf(IdempotencyClaimFailedException.class);
		assertThat(context.getBean(JdbcTemplate.class)
			.queryForObject("SELECT failure FROM processed_messages WHERE consumer_group = ? AND idempotency_key = ?",
					String.class, "lease-nul-failure", key))
			.contains("gateway declined: code").contains("051");
	}

	private static String status(String group, String key) {
		return context.getBean(JdbcTemplate.class)
			.queryForObject("SELECT status FROM processed_messages WHERE consumer_group = ? AND idempotency_key = ?",
					String.class, group, key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Probe probe() {
			return new Probe();
		}

		@Bean
		Listeners listeners(Probe probe) {
			return new Listeners(probe);
		}

		@Bean
		DefaultErrorHandler errorHandler(Probe probe) {
			return new DefaultErrorHandler(
					(record, ex) -> probe.recovered.add(new Recovered(record.topic(), ex.getCause())),
					new FixedBackOff(0, 2));
		}

	}

	record Recovered(String topic, Throwable failure) {
	}

	static class Probe {

		final List<String[]> invocations = new CopyOnWriteArrayList<>();

		final List<Recovered> recovered = new CopyOnWriteArrayList<>();

		List<String> invocations(String listener) {
			return this.invocations.stream().filter((each) -> each[0].equals(listener)).map((each) -> each[1]).toList();
		}

		List<Throwable> recovered(String listener) {
			String topic = "it-" + listener;
			return this.recovered.stream()
				.filter((each) -> each.topic().equals(topic))
				.map(Recovered::failure)
				.toList();
		}

	}

	static class Declined extends RuntimeException {

		Declined(String message) {
			super(message);
		}

	}

	/**
	 * A response object with a back-reference (a line points to its receipt), as client
	 * SDK objects often have: JSON cannot hold the cycle.
	 */
	public static class Receipt {

		private final Line line = new Line(this);

		public Line getLine() {
			return this.line;
		}

	}

	public static class Line {

		private final Receipt receipt;

		Line(Receipt receipt) {
			this.receipt = receipt;
		}

		public Receipt getReceipt() {
			return this.receipt;
		}

	}

	static class Listeners {

		private final Probe probe;

		Listeners(Probe probe) {
			this.probe = probe;
		}

		@KafkaListener(id = "lease-nul-result", topics = RESULT_TOPIC, groupId = "lease-nul-result")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s", storeResult = true)
		public String chargeEchoingTheGateway(String value) {
			this.probe.invocations.add(new String[] { "lease-nul-result", value });
			return "charged: " + value;
		}

		@KafkaListener(id = "lease-unwritable-result", topics = UNWRITABLE_TOPIC, groupId = "lease-unwritable-result")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s", storeResult = true)
		public Receipt chargeReturningAReceipt(String value) {
			this.probe.invocations.add(new String[] { "lease-unwritable-result", value });
			return new Receipt();
		}

		@KafkaListener(id = "lease-nul-failure", topics = FAILURE_TOPIC, groupId = "lease-nul-failure")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s", nonRetryable = Declined.class)
		public void chargeDeclined(String value) {
			this.probe.invocations.add(new String[] { "lease-nul-failure", value });
			throw new Declined("gateway declined: code\u0000051");
		}

	}

}
