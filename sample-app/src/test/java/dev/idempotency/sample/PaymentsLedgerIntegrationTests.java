package dev.idempotency.sample;

import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.function.Predicate;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sample against embedded servers it starts itself: the demo (200 payments, 4 of them
 * overdrafts, with injected duplicates) has run during start-up; its verdict must hold.
 * Retried requests get the stored response, overdrafts are refused once, and bad
 * requests get problem details and change nothing.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "demo", "demo.payments=200", "demo.exit=false", "demo.timeout=60s" })
class PaymentsLedgerIntegrationTests {

	private static final String PAYMENT = "{\"account\":\"alice\",\"amount\":10.00,\"currency\":\"EUR\"}";

	private final HttpClient http = HttpClient.newHttpClient();

	@Autowired
	private Demo demo;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private JsonMapper json;

	@Autowired
	private Environment environment;

	@Autowired
	private KafkaTemplate<String, String> kafka;

	@Autowired
	private ConsumerFactory<String, String> consumers;

	@Autowired
	private MeterRegistry meters;

	@Test
	void demoAppliesEveryPaymentOnceDespiteInjectedDuplicates() {
		DemoVerdict verdict = this.demo.verdict();
		assertThat(verdict).isNotNull();
		assertThat(verdict.drained()).isTrue();
		DemoVerdict.Http http = verdict.http();
		assertThat(http.payments()).isEqualTo(200);
		assertThat(http.overdrafts()).isPositive();
		assertThat(http.retries()).isPositive();
		assertThat(http.answeredDifferently()).isZero();
		assertThat(http.wronglyMarked()).isZero();
		assertThat(http.replayedByStarter()).isEqualTo(http.retries());
		DemoVerdict.Ledger ledger = verdict.ledger();
		assertThat(ledger.created()).isEqualTo(200);
		assertThat(ledger.rejected()).isEqualTo(http.overdrafts());
		assertThat(ledger.booked()).isEqualTo(200 - http.overdrafts());
		assertThat(ledger.decidedOtherwise()).isZero();
		assertThat(ledger.balancesMatch()).as("balances %s, expected %s", ledger.actualBalances(),
				ledger.expectedBalances()).isTrue();
		assertThat(ledger.withoutTheirLedgerEntry()).isZero();
		assertThat(ledger.withoutTheirStatementLine()).isZero();
		assertThat(ledger.withoutTheirRejectionEvent()).isZero();
		assertThat(ledger.eventsPublished()).isGreaterThanOrEqualTo(400);
		DemoVerdict.Redeliveries redeliveries = verdict.redeliveries();
		assertThat(redeliveries.resentEvents()).isPositive();
		assertThat(redeliveries.replayedRecords()).isPositive();
		assertThat(redeliveries.redisOutage()).isTrue();
		assertThat(redeliveries.duplicatesFromCache() + redeliveries.duplicatesFromStore())
			.isGreaterThanOrEqualTo(redeliveries.resentEvents() + redeliveries.replayedRecords());
		assertThat(verdict.gaugesFresh()).isTrue();
		// the gauge read after the drain, whatever tags the application adds to it
		assertThat(verdict.meters()).anySatisfy((meter) -> assertThat(meter).startsWith("idempotency.outbox.pending ")
			.endsWith("| value 0.000"));
		assertThat(verdict.holds()).isTrue();
	}

	@Test
	void retriedPostGetsTheStoredResponseByteForByteAndCreatesOnePayment() throws Exception {
		long paymentsBefore = payments();
		HttpResponse<byte[]> first = send(request("retry-1", "application/json", PAYMENT));
		Map<String, Long> before = settledCounts();
		HttpResponse<byte[]> second = send(request("retry-1", "application/json", PAYMENT));
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
		assertThat(first.headers().firstValue("Location")).hasValueSatisfying(
				(location) -> assertThat(location).startsWith("/payments/"));
		assertThat(second.statusCode()).isEqualTo(201);
		assertThat(second.body()).isEqualTo(first.body());
		assertThat(second.headers().firstValue("Content-Type")).isEqualTo(first.headers().firstValue("Content-Type"));
		assertThat(second.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
		assertThat(second.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertThat(settledCounts()).isEqualTo(before);
		assertThat(payments()).isEqualTo(paymentsBefore + 1);
		// the starter's claim of the key, with the response it replays
		assertThat(this.jdbc.queryForObject("""
				SELECT count(*) FROM processed_messages
				WHERE consumer_group = 'http POST /payments' AND idempotency_key = 'retry-1' AND result IS NOT NULL""",
				Long.class)).isOne();
	}

	@Test
	void keyReusedWithAnotherBodyGets422AndChangesNothing() throws Exception {
		assertThat(post("reused-1", PAYMENT).statusCode()).isEqualTo(201);
		Map<String, Long> before = settledCounts();
		HttpResponse<String> response = post("reused-1", "{\"account\":\"alice\",\"amount\":11.00,\"currency\":\"EUR\"}");
		assertThat(response.statusCode()).isEqualTo(422);
		assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(
				(type) -> assertThat(type).startsWith("application/problem+json"));
		assertThat(this.json.readTree(response.body()).path("code").asString()).isEqualTo("idempotency-key-reused");
		assertThat(settledCounts()).isEqualTo(before);
	}

	@Test
	void refusedRequestIsNotStoredSoItsRetryIsValidatedAgain() throws Exception {
		String mismatch = "{\"account\":\"alice\",\"amount\":10.00,\"currency\":\"USD\"}";
		Map<String, Long> before = settledCounts();
		HttpResponse<String> refused = post("refused-1", mismatch);
		HttpResponse<String> refusedAgain = post("refused-1", mismatch);
		assertThat(refused.statusCode()).isEqualTo(422);
		assertThat(refusedAgain.statusCode()).isEqualTo(422);
		assertThat(refusedAgain.headers().firstValue("Idempotent-Replayed")).isEmpty();
		assertThat(settledCounts()).isEqualTo(before);
		// corrected, with the same key: validated again and created
		HttpResponse<String> created = post("refused-1", PAYMENT);
		assertThat(created.statusCode()).isEqualTo(201);
		assertThat(created.headers().firstValue("Idempotent-Replayed")).isEmpty();
	}

	@Test
	void overdraftIsRejectedOnceAndItsStatusIsVisible() throws Exception {
		settledCounts();
		BigDecimal balance = balance("carol");
		String overdraft = "{\"account\":\"carol\",\"amount\":%s,\"currency\":\"EUR\"}"
			.formatted(balance.add(new BigDecimal("0.01")));
		HttpResponse<String> created = post("overdraft-1", overdraft);
		assertThat(created.statusCode()).isEqualTo(201);
		JsonNode accepted = this.json.readTree(created.body());
		assertThat(accepted.path("status").asString()).isEqualTo("PENDING");
		String id = accepted.path("id").asString();
		JsonNode rejected = await(() -> get("/payments/" + id),
				(payment) -> payment.path("status").asString().equals("REJECTED"));
		assertThat(rejected.path("reason").asString()).contains("insufficient funds");
		Map<String, Long> before = settledCounts();
		// the payment's event delivered again, as a relay retry does: the ledger skips it
		double duplicates = ledgerDuplicates();
		resendPaymentEvent(UUID.fromString(id));
		await(this::ledgerDuplicates, (count) -> count > duplicates);
		assertThat(settledCounts()).isEqualTo(before);
		assertThat(balance("carol")).isEqualByComparingTo(balance);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM ledger_entries WHERE payment_id = ?::uuid",
				Long.class, id)).isZero();
		assertThat(get("/payments/" + id).path("status").asString()).isEqualTo("REJECTED");
		assertThat(new PublishedEvents(this.consumers, this.json).eventIdsByPayment("payment-rejected",
				Duration.ofSeconds(20))).hasEntrySatisfying(UUID.fromString(id),
						(eventIds) -> assertThat(eventIds).hasSize(1));
		// the account still takes the payments it can cover
		HttpResponse<String> covered = post("overdraft-2",
				"{\"account\":\"carol\",\"amount\":1.00,\"currency\":\"EUR\"}");
		String coveredId = this.json.readTree(covered.body()).path("id").asString();
		await(() -> get("/payments/" + coveredId), (payment) -> payment.path("status").asString().equals("BOOKED"));
	}

	@Test
	void healthShowsItsComponents() throws Exception {
		JsonNode health = get("/actuator/health");
		assertThat(health.path("status").asString()).isEqualTo("UP");
		assertThat(health.path("components").path("idempotency").path("status").asString()).isEqualTo("UP");
		assertThat(health.path("components").path("db").path("status").asString()).isEqualTo("UP");
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("badRequests")
	void badRequestGetsProblemDetailAndChangesNothing(String name, String key, String contentType, String body,
			int status) throws Exception {
		Map<String, Long> before = settledCounts();
		HttpResponse<String> response = this.http.send(request(key, contentType, body),
				HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).isEqualTo(status);
		assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(
				(type) -> assertThat(type).startsWith("application/problem+json"));
		JsonNode problem = this.json.readTree(response.body());
		assertThat(problem.path("status").asInt()).isEqualTo(status);
		assertThat(problem.path("title").asString()).isNotBlank();
		assertThat(problem.path("detail").asString()).isNotBlank();
		assertThat(settledCounts()).isEqualTo(before);
	}

	static Object[][] badRequests() {
		String json = "application/json";
		return new Object[][] { { "missing account", "bad-1", json, "{\"amount\":1,\"currency\":\"EUR\"}", 400 },
				{ "missing amount", "bad-2", json, "{\"account\":\"alice\",\"currency\":\"EUR\"}", 400 },
				{ "missing currency", "bad-3", json, "{\"account\":\"alice\",\"amount\":1}", 400 },
				{ "empty body", "bad-4", json, "{}", 400 },
				{ "negative amount", "bad-5", json, "{\"account\":\"alice\",\"amount\":-5,\"currency\":\"EUR\"}",
						400 },
				{ "zero amount", "bad-6", json, "{\"account\":\"alice\",\"amount\":0,\"currency\":\"EUR\"}", 400 },
				{ "three decimals", "bad-7", json,
						"{\"account\":\"alice\",\"amount\":1.005,\"currency\":\"EUR\"}", 400 },
				{ "amount 1e20", "bad-8", json, "{\"account\":\"alice\",\"amount\":1e20,\"currency\":\"EUR\"}", 400 },
				{ "16 digits before the point", "bad-9", json,
						"{\"account\":\"alice\",\"amount\":1000000000000000,\"currency\":\"EUR\"}", 400 },
				{ "unknown account", "bad-10", json, "{\"account\":\"zed\",\"amount\":1,\"currency\":\"EUR\"}", 422 },
				{ "wrong currency", "bad-11", json, "{\"account\":\"alice\",\"amount\":1,\"currency\":\"USD\"}",
						422 },
				{ "malformed JSON", "bad-12", json, "{\"account\":\"alice\",\"amount\":", 400 },
				{ "amount not a number", "bad-13", json,
						"{\"account\":\"alice\",\"amount\":\"ten\",\"currency\":\"EUR\"}", 400 },
				{ "not JSON", "bad-14", "text/plain", PAYMENT, 415 },
				{ "body over 1 MB", "bad-15", json,
						"{\"account\":\"alice\",\"amount\":1,\"currency\":\"EUR\",\"note\":\"" + "x".repeat(1_100_000)
								+ "\"}",
						413 },
				{ "10,000-character key", "k".repeat(10_000), json, PAYMENT, 400 },
				{ "missing key", null, json, PAYMENT, 400 } };
	}

	private HttpResponse<String> post(String key, String body) throws Exception {
		return this.http.send(request(key, "application/json", body), HttpResponse.BodyHandlers.ofString());
	}

	private HttpResponse<byte[]> send(HttpRequest request) throws Exception {
		return this.http.send(request, HttpResponse.BodyHandlers.ofByteArray());
	}

	private HttpRequest request(String key, String contentType, String body) {
		HttpRequest.Builder request = HttpRequest.newBuilder(uri("/payments"))
			.header("Content-Type", contentType)
			.POST(HttpRequest.BodyPublishers.ofString(body));
		if (key != null) {
			request.header("Idempotency-Key", key);
		}
		return request.build();
	}

	private JsonNode get(String path) throws Exception {
		HttpResponse<String> response = this.http.send(HttpRequest.newBuilder(uri(path)).GET().build(),
				HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as("GET %s: %s", path, response.body()).isEqualTo(200);
		return this.json.readTree(response.body());
	}

	private URI uri(String path) {
		return URI.create("http://localhost:" + this.environment.getProperty("local.server.port") + path);
	}

	private long payments() {
		return this.jdbc.queryForObject("SELECT count(*) FROM payments", Long.class);
	}

	private BigDecimal balance(String account) {
		return this.jdbc.queryForObject("SELECT balance FROM accounts WHERE id = ?", BigDecimal.class, account);
	}

	private double ledgerDuplicates() {
		return this.meters.find("idempotency.messages")
			.tag("listener", "PaymentListener.onPayment")
			.tag("outcome", "duplicate")
			.counters()
			.stream()
			.mapToDouble(Counter::count)
			.sum();
	}

	// as a relay that dies after sending does: the same event, with the same event id
	private void resendPaymentEvent(UUID payment) throws Exception {
		Map<String, Object> row = this.jdbc.queryForMap(
				"SELECT account_id, amount, currency, event_id FROM payments WHERE id = ?", payment);
		PaymentRequested event = new PaymentRequested(payment, (String) row.get("account_id"),
				(BigDecimal) row.get("amount"), ((String) row.get("currency")).trim());
		ProducerRecord<String, String> record = new ProducerRecord<>("payments", event.account(),
				this.json.writeValueAsString(event));
		record.headers().add("X-Idempotency-Key", row.get("event_id").toString().getBytes(StandardCharsets.UTF_8));
		this.kafka.send(record).get();
	}

	private static <T> T await(Callable<T> value, Predicate<T> condition) throws Exception {
		long deadline = System.nanoTime() + 20_000_000_000L;
		T current = value.call();
		while (!condition.test(current) && System.nanoTime() < deadline) {
			Thread.sleep(50);
			current = value.call();
		}
		assertThat(condition.test(current)).as("condition met by %s", current).isTrue();
		return current;
	}

	// once the outbox is empty and the ledger decided every payment, nothing changes by
	// itself
	private Map<String, Long> settledCounts() throws InterruptedException {
		long deadline = System.nanoTime() + 20_000_000_000L;
		while (System.nanoTime() < deadline) {
			Map<String, Long> counts = counts();
			if (counts.get("outbox") == 0 && counts.get("pending") == 0) {
				return counts;
			}
			Thread.sleep(50);
		}
		return counts();
	}

	// one statement, so one snapshot: read one by one, a debit committed between the
	// balances and the status would look settled with the balance before it
	private Map<String, Long> counts() {
		return this.jdbc.queryForObject("""
				SELECT (SELECT count(*) FROM payments) AS payments, (SELECT count(*) FROM outbox) AS outbox,
				       (SELECT sum(balance * 100)::bigint FROM accounts) AS balances,
				       (SELECT count(*) FROM ledger_entries) AS ledger,
				       (SELECT count(*) FROM payments WHERE status = 'PENDING') AS pending,
				       (SELECT count(*) FROM payments WHERE status = 'REJECTED') AS rejected
				""", (row, rowNum) -> {
			Map<String, Long> counts = new LinkedHashMap<>();
			for (String column : List.of("payments", "outbox", "balances", "ledger", "pending", "rejected")) {
				counts.put(column, row.getLong(column));
			}
			return counts;
		});
	}

}
