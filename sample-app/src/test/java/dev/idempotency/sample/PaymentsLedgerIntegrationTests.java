package dev.idempotency.sample;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.LinkedHashMap;
import java.util.Map;

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

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sample against embedded servers it starts itself: the demo (200 payments with
 * injected duplicates) has run during start-up; its verdict must hold, and bad requests
 * must get problem details and change nothing.
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

	@Test
	void demoAppliesEveryPaymentOnceDespiteInjectedDuplicates() {
		DemoVerdict verdict = this.demo.verdict();
		assertThat(verdict).isNotNull();
		assertThat(verdict.drained()).isTrue();
		assertThat(verdict.paymentsCreated()).isEqualTo(200);
		assertThat(verdict.httpRetries()).isPositive();
		assertThat(verdict.httpRetriesAnsweredDifferently()).isZero();
		assertThat(verdict.balancesMatch()).as("balances %s, expected %s", verdict.actualBalances(),
				verdict.expectedBalances()).isTrue();
		assertThat(verdict.paymentsWithoutOneLedgerEntry()).isZero();
		assertThat(verdict.paymentsWithoutOneStatementLine()).isZero();
		assertThat(verdict.resentEvents()).isPositive();
		assertThat(verdict.replayedRecords()).isPositive();
		assertThat(verdict.redisOutage()).isTrue();
		assertThat(verdict.duplicatesFromCache() + verdict.duplicatesFromStore())
			.isGreaterThanOrEqualTo(verdict.resentEvents() + verdict.replayedRecords());
		assertThat(verdict.eventsPublished()).isGreaterThanOrEqualTo(400);
		assertThat(verdict.holds()).isTrue();
	}

	@Test
	void repeatedRequestGetsTheFirstResponseAndCreatesNothing() throws Exception {
		HttpResponse<String> first = post("retry-1", PAYMENT);
		Map<String, Long> before = settledCounts();
		HttpResponse<String> second = post("retry-1", PAYMENT);
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(second.statusCode()).isEqualTo(201);
		assertThat(second.body()).isEqualTo(first.body());
		assertThat(second.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertThat(settledCounts()).isEqualTo(before);
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("badRequests")
	void badRequestGetsProblemDetailAndChangesNothing(String name, String key, String body, int status)
			throws Exception {
		post("reused", PAYMENT);
		Map<String, Long> before = settledCounts();
		HttpResponse<String> response = post(key, body);
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
		return new Object[][] { { "missing account", "bad-1", "{\"amount\":1,\"currency\":\"EUR\"}", 400 },
				{ "missing amount", "bad-2", "{\"account\":\"alice\",\"currency\":\"EUR\"}", 400 },
				{ "missing currency", "bad-3", "{\"account\":\"alice\",\"amount\":1}", 400 },
				{ "empty body", "bad-4", "{}", 400 },
				{ "negative amount", "bad-5", "{\"account\":\"alice\",\"amount\":-5,\"currency\":\"EUR\"}", 400 },
				{ "zero amount", "bad-6", "{\"account\":\"alice\",\"amount\":0,\"currency\":\"EUR\"}", 400 },
				{ "three decimals", "bad-7", "{\"account\":\"alice\",\"amount\":1.005,\"currency\":\"EUR\"}", 400 },
				{ "unknown account", "bad-8", "{\"account\":\"zed\",\"amount\":1,\"currency\":\"EUR\"}", 422 },
				{ "wrong currency", "bad-9", "{\"account\":\"alice\",\"amount\":1,\"currency\":\"USD\"}", 422 },
				{ "malformed JSON", "bad-10", "{\"account\":\"alice\",\"amount\":", 400 },
				{ "amount not a number", "bad-11", "{\"account\":\"alice\",\"amount\":\"ten\",\"currency\":\"EUR\"}",
						400 },
				{ "10,000-character key", "k".repeat(10_000), PAYMENT, 400 },
				{ "missing key", null, PAYMENT, 400 },
				{ "key reused for another payment", "reused",
						"{\"account\":\"bob\",\"amount\":10.00,\"currency\":\"EUR\"}", 422 } };
	}

	private HttpResponse<String> post(String key, String body) throws Exception {
		HttpRequest.Builder request = HttpRequest
			.newBuilder(URI.create("http://localhost:" + this.environment.getProperty("local.server.port") + "/payments"))
			.header("Content-Type", "application/json")
			.POST(HttpRequest.BodyPublishers.ofString(body));
		if (key != null) {
			request.header("Idempotency-Key", key);
		}
		return this.http.send(request.build(), HttpResponse.BodyHandlers.ofString());
	}

	// once the outbox is empty and every payment is debited, nothing changes by itself
	private Map<String, Long> settledCounts() throws InterruptedException {
		long deadline = System.nanoTime() + 20_000_000_000L;
		while (System.nanoTime() < deadline) {
			Map<String, Long> counts = counts();
			if (counts.get("outbox") == 0 && counts.get("ledger").equals(counts.get("payments"))) {
				counts.remove("ledger");
				return counts;
			}
			Thread.sleep(50);
		}
		Map<String, Long> counts = counts();
		counts.remove("ledger");
		return counts;
	}

	// one statement, so one snapshot: read one by one, a debit committed between the
	// balances and the ledger count would look settled with the balance before it
	private Map<String, Long> counts() {
		return this.jdbc.queryForObject("""
				SELECT (SELECT count(*) FROM payments) AS payments, (SELECT count(*) FROM outbox) AS outbox,
				       (SELECT sum(balance * 100)::bigint FROM accounts) AS balances,
				       (SELECT count(*) FROM ledger_entries) AS ledger
				""", (row, rowNum) -> {
			Map<String, Long> counts = new LinkedHashMap<>();
			counts.put("payments", row.getLong("payments"));
			counts.put("outbox", row.getLong("outbox"));
			counts.put("balances", row.getLong("balances"));
			counts.put("ledger", row.getLong("ledger"));
			return counts;
		});
	}

}
