package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.IdempotencyClaimFailedException;
import dev.idempotency.IdempotencyResultNotStoredException;
import dev.idempotency.Idempotent;
import dev.idempotency.internal.consumer.ListenerFixtures.Recovered;
import dev.idempotency.internal.consumer.ListenerFixtures.RecoveringErrorHandler;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;

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

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(RESULT_TOPIC, UNWRITABLE_TOPIC, FAILURE_TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.error-handler.retries=2",
				"idempotency.infrastructure-retry.initial-interval=100ms",
				"idempotency.infrastructure-retry.max-interval=300ms");

	@Test
	void aResultTheDatabaseRefusesCompletesTheClaimWithoutItAndACopyIsNotRunAgain() throws Exception {
		Invocations invocations = app.bean(Invocations.class);
		Recovered recovered = app.bean(Recovered.class);
		String key = UUID.randomUUID().toString();
		app.send(RESULT_TOPIC, "charge card 42\u0000", key);
		app.awaitCommitted("lease-nul-result", RESULT_TOPIC);
		await().atMost(Duration.ofSeconds(10)).until(() -> !recovered.exceptions(RESULT_TOPIC).isEmpty());
		assertThat(status("lease-nul-result", key)).isEqualTo("COMPLETED");
		assertThat(recovered.exceptions(RESULT_TOPIC)).singleElement()
			.isInstanceOf(IdempotencyResultNotStoredException.class);
		// a copy of the message once the lease (1 s) has passed
		Thread.sleep(1500);
		app.send(RESULT_TOPIC, "charge card 42\u0000", key);
		app.awaitCommitted("lease-nul-result", RESULT_TOPIC);
		assertThat(invocations.of("lease-nul-result")).as("card charges for one message").hasSize(1);
	}

	@Test
	void aResultTheCodecCannotWriteCompletesTheClaimWithoutItAndIsNotRunAgain() throws Exception {
		Invocations invocations = app.bean(Invocations.class);
		String key = UUID.randomUUID().toString();
		app.send(UNWRITABLE_TOPIC, "card 43", key);
		app.awaitCommitted("lease-unwritable-result", UNWRITABLE_TOPIC);
		// long enough for the error handler's retries, each after a lease
		Thread.sleep(4000);
		assertThat(invocations.of("lease-unwritable-result")).as("card charges for one record").hasSize(1);
		assertThat(status("lease-unwritable-result", key)).isEqualTo("COMPLETED");
		assertThat(app.bean(Recovered.class).exceptions(UNWRITABLE_TOPIC)).singleElement()
			.isInstanceOf(IdempotencyResultNotStoredException.class);
	}

	@Test
	void aNonRetryableFailureWhoseTextTheDatabaseRefusesMarksTheClaimFailedAndGoesToTheRecovererOnce()
			throws Exception {
		Invocations invocations = app.bean(Invocations.class);
		String key = UUID.randomUUID().toString();
		app.send(FAILURE_TOPIC, "card 44", key);
		app.awaitCommitted("lease-nul-failure", FAILURE_TOPIC);
		Thread.sleep(4000);
		assertThat(invocations.of("lease-nul-failure")).as("invocations for one record").hasSize(1);
		assertThat(status("lease-nul-failure", key)).isEqualTo("FAILED");
		assertThat(app.bean(Recovered.class).exceptions(FAILURE_TOPIC)).singleElement()
			.isInstanceOf(IdempotencyClaimFailedException.class);
		assertThat(app.jdbc()
			.queryForObject("SELECT failure FROM processed_messages WHERE consumer_group = ? AND idempotency_key = ?",
					String.class, "lease-nul-failure", key))
			.contains("gateway declined: code").contains("051");
	}

	private static String status(String group, String key) {
		return TestEffects.status(app.jdbc(), group, key);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ Invocations.class, RecoveringErrorHandler.class })
	static class App {

		@Bean
		Listeners listeners(Invocations invocations) {
			return new Listeners(invocations);
		}

	}

	// what the listeners were called with; apart from them, since they are proxied
	static class Invocations {

		private final List<String[]> invocations = new CopyOnWriteArrayList<>();

		void add(String listener, String value) {
			this.invocations.add(new String[] { listener, value });
		}

		List<String> of(String listener) {
			return this.invocations.stream().filter((each) -> each[0].equals(listener)).map((each) -> each[1]).toList();
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

		private final Invocations invocations;

		Listeners(Invocations invocations) {
			this.invocations = invocations;
		}

		@KafkaListener(id = "lease-nul-result", topics = RESULT_TOPIC, groupId = "lease-nul-result")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s", storeResult = true)
		public String chargeEchoingTheGateway(String value) {
			this.invocations.add("lease-nul-result", value);
			return "charged: " + value;
		}

		@KafkaListener(id = "lease-unwritable-result", topics = UNWRITABLE_TOPIC, groupId = "lease-unwritable-result")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s", storeResult = true)
		public Receipt chargeReturningAReceipt(String value) {
			this.invocations.add("lease-unwritable-result", value);
			return new Receipt();
		}

		@KafkaListener(id = "lease-nul-failure", topics = FAILURE_TOPIC, groupId = "lease-nul-failure")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s", nonRetryable = Declined.class)
		public void chargeDeclined(String value) {
			this.invocations.add("lease-nul-failure", value);
			throw new Declined("gateway declined: code\u0000051");
		}

	}

}
