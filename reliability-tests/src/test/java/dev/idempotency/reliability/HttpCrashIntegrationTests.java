package dev.idempotency.reliability;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.util.FileSystemUtils;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code @Idempotent} Spring MVC handlers when the application dies: the
 * {@link CheckoutApplication} runs as a process of its own on PostgreSQL, and is killed
 * with SIGKILL while a handler holds a request, then started again on the same database.
 * <p>
 * What each mode promises, and what is counted here:
 * <ul>
 * <li>Transactional: the claim, the handler's database work and the stored response
 * commit together after the handler returns. A process killed in the handler committed
 * none of them, so the retry runs the handler again and there is one order.
 * <li>Lease: the claim commits first, and the handler's effects outside the database
 * (the payment provider's calls) cannot be undone by a crash. A retry gets 409 while the
 * dead request's lease is live; once it expires, a retry takes the key over with a larger
 * fencing token and runs the handler again. The provider is therefore called twice; the
 * starter promises a growing fencing token, which lets the provider keep one charge per
 * key and refuse the stale caller, and one stored response, replayed from then on.
 * </ul>
 */
class HttpCrashIntegrationTests {

	private static final Path WORK = Path.of(System.getProperty("reliability.work-dir", "target/reliability"))
		.resolve("http-crash");

	private static final String REPLAYED = "Idempotent-Replayed";

	private static PostgresServer postgres;

	private static CheckoutServer checkout;

	@BeforeAll
	static void startServers() throws Exception {
		FileSystemUtils.deleteRecursively(WORK);
		postgres = new PostgresServer(WORK.resolve("postgres"));
		postgres.start();
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			statement.execute(Checkout.SCHEMA);
			statement.execute(PaymentProvider.SCHEMA);
		}
		checkout = new CheckoutServer(postgres.jdbcUrl(), WORK);
	}

	@AfterAll
	static void stopServers() throws IOException {
		if (checkout != null) {
			checkout.kill();
		}
		if (postgres != null) {
			postgres.stop();
		}
	}

	@BeforeEach
	void checkoutRuns() throws Exception {
		if (!checkout.isAlive()) {
			checkout.start();
		}
	}

	@Test
	void aTransactionalRequestKilledInItsHandlerCommitsNothingAndItsRetryCommitsOnce() throws Exception {
		String key = UUID.randomUUID().toString();
		String order = "{\"item\":\"book\"}";
		checkout.hold(key);
		CompletableFuture<HttpResponse<byte[]>> first = sendAsync("/orders", key, order);
		long firstPid = awaitRun("order", key);
		// the handler wrote its order and holds: the order and the claim are in one open
		// transaction, and the client has no answer yet
		assertThat(longs("SELECT count(*) FROM orders WHERE idempotency_key = ?", key)).containsExactly(0L);
		assertThat(claims(key)).isEmpty();
		assertThat(first).isNotDone();

		checkout.kill();
		assertThat(first).failsWithin(Duration.ofSeconds(10))
			.withThrowableOfType(ExecutionException.class)
			.withCauseInstanceOf(IOException.class);
		// the dead request committed nothing: no order, and the key is free
		assertThat(longs("SELECT count(*) FROM orders WHERE idempotency_key = ?", key)).containsExactly(0L);
		assertThat(claims(key)).isEmpty();

		checkout.release(key);
		long pid = checkout.start();
		assertThat(pid).isNotEqualTo(firstPid);
		HttpResponse<byte[]> retry = post("/orders", key, order);
		assertThat(retry.statusCode()).isEqualTo(201);
		assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
		String location = retry.headers().firstValue("Location").orElseThrow();
		// the handler ran twice, one run per process; one order, the retry's, committed
		assertThat(longs("SELECT pid FROM handler_runs WHERE handler = 'order' AND idempotency_key = ? "
				+ "ORDER BY started_at", key)).containsExactly(firstPid, pid);
		assertThat(strings("SELECT '/orders/' || id FROM orders WHERE idempotency_key = ?", key))
			.containsExactly(location);
		assertThat(longs("SELECT pid FROM orders WHERE idempotency_key = ?", key)).containsExactly(pid);
		assertThat(claims(key)).containsExactly("stored");

		HttpResponse<byte[]> replay = post("/orders", key, order);
		assertThat(replay.statusCode()).isEqualTo(201);
		assertThat(replay.body()).isEqualTo(retry.body());
		assertThat(replay.headers().firstValue(REPLAYED)).hasValue("true");
		assertThat(longs("SELECT count(*) FROM orders WHERE idempotency_key = ?", key)).containsExactly(1L);
	}

	@Test
	void aLeaseKilledInItsHandlerAnswers409UntilItExpiresThenIsTakenOverWithALargerFencingToken() throws Exception {
		String key = UUID.randomUUID().toString();
		String payment = "{\"amount\":2500}";
		checkout.hold(key);
		CompletableFuture<HttpResponse<byte[]>> first = sendAsync("/payments", key, payment);
		long firstPid = awaitRun("payment", key);
		// the handler records its run, then calls the provider: wait for the call too
		Awaitility.await()
			.atMost(Duration.ofSeconds(30))
			.untilAsserted(() -> assertThat(providerCalls(key)).hasSize(1));
		List<ProviderCall> calls = providerCalls(key);
		assertThat(calls).hasSize(1);
		long firstToken = calls.get(0).fencingToken();
		assertThat(calls.get(0)).isEqualTo(new ProviderCall(firstToken, true, firstPid));
		// the claim committed before the handler ran, with the token the handler was given
		assertThat(claims(key)).containsExactly("IN_PROGRESS " + firstToken);

		checkout.kill();
		assertThat(first).failsWithin(Duration.ofSeconds(10))
			.withThrowableOfType(ExecutionException.class)
			.withCauseInstanceOf(IOException.class);
		checkout.release(key);
		long pid = checkout.start();
		assertThat(pid).isNotEqualTo(firstPid);

		// the restart took less than the lease (Checkout.PAYMENT_LEASE): the dead request's
		// lease is live, so the retry is refused and the provider is not called
		assertThat(longs("SELECT count(*) FROM processed_messages WHERE idempotency_key = ? AND lease_until > now()",
				key)).as("a live lease after the restart; raise Checkout.PAYMENT_LEASE if the restart took longer")
			.containsExactly(1L);
		HttpResponse<byte[]> refused = post("/payments", key, payment);
		assertThat(refused.statusCode()).isEqualTo(409);
		assertThat(new String(refused.body())).contains("\"code\":\"idempotency-key-in-progress\"");
		assertThat(providerCalls(key)).hasSize(1);

		awaitLeaseExpiry(key);
		HttpResponse<byte[]> takeover = post("/payments", key, payment);
		assertThat(takeover.statusCode()).isEqualTo(201);
		assertThat(takeover.headers().firstValue(REPLAYED)).isEmpty();
		calls = providerCalls(key);
		assertThat(calls).hasSize(2);
		long token = calls.get(1).fencingToken();
		assertThat(token).isGreaterThan(firstToken);
		assertThat(calls.get(1)).isEqualTo(new ProviderCall(token, true, pid));
		assertThat(new String(takeover.body())).contains("\"fencingToken\":" + token + ",");
		assertThat(claims(key)).containsExactly("COMPLETED " + token + " stored");
		// two calls: the dead request's cannot be undone. The provider keeps one charge,
		// the holder of the larger token's; a late write with the dead request's token
		// would be refused
		assertThat(longs("SELECT fencing_token FROM provider_charges WHERE idempotency_key = ?", key))
			.containsExactly(token);

		HttpResponse<byte[]> replay = post("/payments", key, payment);
		assertThat(replay.statusCode()).isEqualTo(201);
		assertThat(replay.body()).isEqualTo(takeover.body());
		assertThat(replay.headers().firstValue("Content-Type"))
			.isEqualTo(takeover.headers().firstValue("Content-Type"));
		assertThat(replay.headers().firstValue(REPLAYED)).hasValue("true");
		assertThat(providerCalls(key)).hasSize(2);
		assertThat(longs("SELECT count(*) FROM handler_runs WHERE idempotency_key = ?", key)).containsExactly(2L);
	}

	@Test
	void aStoredResponseIsReplayedByteForByteAfterARestart() throws Exception {
		String orderKey = UUID.randomUUID().toString();
		String order = "{\"item\":\"lamp\"}";
		String paymentKey = UUID.randomUUID().toString();
		String payment = "{\"amount\":990}";
		HttpResponse<byte[]> ordered = post("/orders", orderKey, order);
		HttpResponse<byte[]> paid = post("/payments", paymentKey, payment);
		assertThat(ordered.statusCode()).isEqualTo(201);
		assertThat(paid.statusCode()).isEqualTo(201);

		checkout.stop();
		checkout.start();

		HttpResponse<byte[]> orderReplay = post("/orders", orderKey, order);
		assertThat(orderReplay.statusCode()).isEqualTo(201);
		assertThat(orderReplay.body()).isEqualTo(ordered.body());
		assertThat(orderReplay.headers().firstValue("Location")).isEqualTo(ordered.headers().firstValue("Location"));
		assertThat(orderReplay.headers().firstValue("Content-Type"))
			.isEqualTo(ordered.headers().firstValue("Content-Type"));
		assertThat(orderReplay.headers().firstValue(REPLAYED)).hasValue("true");
		HttpResponse<byte[]> paymentReplay = post("/payments", paymentKey, payment);
		assertThat(paymentReplay.statusCode()).isEqualTo(201);
		assertThat(paymentReplay.body()).isEqualTo(paid.body());
		assertThat(paymentReplay.headers().firstValue("Content-Type"))
			.isEqualTo(paid.headers().firstValue("Content-Type"));
		assertThat(paymentReplay.headers().firstValue(REPLAYED)).hasValue("true");
		// each handler ran once, before the restart
		assertThat(longs("SELECT count(*) FROM orders WHERE idempotency_key = ?", orderKey)).containsExactly(1L);
		assertThat(providerCalls(paymentKey)).hasSize(1);
		assertThat(longs("SELECT count(*) FROM handler_runs WHERE idempotency_key IN (?, ?)", orderKey, paymentKey))
			.containsExactly(2L);
	}

	private static HttpRequest request(String path, String key, String body) {
		return HttpRequest.newBuilder(checkout.uri(path))
			.header("Content-Type", "application/json")
			.header("Idempotency-Key", key)
			.timeout(Duration.ofSeconds(30))
			.POST(HttpRequest.BodyPublishers.ofString(body))
			.build();
	}

	private static HttpResponse<byte[]> post(String path, String key, String body) throws Exception {
		return checkout.client().send(request(path, key, body), HttpResponse.BodyHandlers.ofByteArray());
	}

	private static CompletableFuture<HttpResponse<byte[]>> sendAsync(String path, String key, String body) {
		return checkout.client().sendAsync(request(path, key, body), HttpResponse.BodyHandlers.ofByteArray());
	}

	// the process id of the handler's run, once the handler recorded it
	private static long awaitRun(String handler, String key) throws Exception {
		long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
		while (true) {
			List<Long> runs = longs("SELECT pid FROM handler_runs WHERE handler = ? AND idempotency_key = ?", handler,
					key);
			if (!runs.isEmpty()) {
				assertThat(runs).hasSize(1);
				return runs.get(0);
			}
			assertThat(System.nanoTime()).as("the %s handler runs for %s", handler, key).isLessThan(deadline);
			Thread.sleep(20);
		}
	}

	// the database's clock decides the expiry, as it does for the claim
	private static void awaitLeaseExpiry(String key) throws Exception {
		long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
		while (!longs("SELECT count(*) FROM processed_messages WHERE idempotency_key = ? AND lease_until <= now()",
				key).equals(List.of(1L))) {
			assertThat(System.nanoTime()).as("the lease of %s expires", key).isLessThan(deadline);
			Thread.sleep(50);
		}
	}

	// each claim of the key, as status, fencing token and whether a response is stored
	private static List<String> claims(String key) throws SQLException {
		return strings("""
				SELECT concat_ws(' ', status, fencing_token, CASE WHEN result IS NOT NULL THEN 'stored' END)
				FROM processed_messages WHERE idempotency_key = ?""", key);
	}

	private static List<ProviderCall> providerCalls(String key) throws SQLException {
		try (Connection connection = connect();
				PreparedStatement statement = prepare(connection,
						"SELECT fencing_token, accepted, pid FROM provider_calls WHERE idempotency_key = ? "
								+ "ORDER BY called_at",
						key);
				ResultSet rows = statement.executeQuery()) {
			List<ProviderCall> calls = new ArrayList<>();
			while (rows.next()) {
				calls.add(new ProviderCall(rows.getLong(1), rows.getBoolean(2), rows.getLong(3)));
			}
			return calls;
		}
	}

	private static List<Long> longs(String sql, Object... parameters) throws SQLException {
		try (Connection connection = connect();
				PreparedStatement statement = prepare(connection, sql, parameters);
				ResultSet rows = statement.executeQuery()) {
			List<Long> values = new ArrayList<>();
			while (rows.next()) {
				values.add(rows.getLong(1));
			}
			return values;
		}
	}

	private static List<String> strings(String sql, Object... parameters) throws SQLException {
		try (Connection connection = connect();
				PreparedStatement statement = prepare(connection, sql, parameters);
				ResultSet rows = statement.executeQuery()) {
			List<String> values = new ArrayList<>();
			while (rows.next()) {
				values.add(rows.getString(1));
			}
			return values;
		}
	}

	private static PreparedStatement prepare(Connection connection, String sql, Object... parameters)
			throws SQLException {
		PreparedStatement statement = connection.prepareStatement(sql);
		for (int i = 0; i < parameters.length; i++) {
			statement.setObject(i + 1, parameters[i]);
		}
		return statement;
	}

	private static Connection connect() throws SQLException {
		return DriverManager.getConnection(postgres.jdbcUrl(), "postgres", "postgres");
	}

	record ProviderCall(long fencingToken, boolean accepted, long pid) {
	}

}
