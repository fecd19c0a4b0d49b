package dev.idempotency.reliability;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import com.sun.net.httpserver.HttpServer;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The suite's network faults, each shown to take effect on a real client of a real
 * PostgreSQL through a {@link NetworkProxy}: latency the client measures, a reset the
 * client sees, a black hole that answers nothing and closes nothing (the client times
 * out, the server never hears of the statement until it heals, then runs it), and a
 * half-open connection (the server runs the statement, the client never hears of it); and
 * HTTP answers dropped, for a share of the requests, after the server handled them.
 */
class NetworkProxyIntegrationTests {

	private static final Path WORK = Path.of(System.getProperty("reliability.work-dir", "target/reliability"));

	private static PostgresServer postgres;

	private NetworkProxy proxy;

	private final List<Connection> connections = new ArrayList<>();

	@BeforeAll
	static void startPostgres() throws IOException {
		Path directory = WORK.resolve("network-proxy").resolve("postgres");
		if (Files.exists(directory.getParent())) {
			try (Stream<Path> paths = Files.walk(directory.getParent())) {
				for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
					Files.delete(path);
				}
			}
		}
		postgres = new PostgresServer(directory);
		postgres.start();
	}

	@AfterAll
	static void stopPostgres() throws IOException {
		postgres.stop();
	}

	@BeforeEach
	void startProxy() throws SQLException {
		this.proxy = new NetworkProxy("postgres").start(postgres.port());
		try (Connection direct = direct(); Statement statement = direct.createStatement()) {
			statement.execute("DROP TABLE IF EXISTS effects");
			statement.execute("CREATE TABLE effects (id INT)");
		}
	}

	@AfterEach
	void closeConnections() {
		this.proxy.close();
		for (Connection connection : this.connections) {
			try {
				connection.close();
			}
			catch (SQLException ex) {
				// broken by the test
			}
		}
	}

	@Test
	void addedLatencyDelaysEveryRoundTripByTheDelayEachWay() throws Exception {
		Connection connection = throughProxy("latency", 10);
		selectOne(connection);
		this.proxy.addLatency(Duration.ofMillis(300));
		long started = System.nanoTime();
		selectOne(connection);
		Duration roundTrip = Duration.ofNanos(System.nanoTime() - started);
		assertThat(roundTrip).isGreaterThanOrEqualTo(Duration.ofMillis(600));
		assertThat(this.proxy.stats().delayedChunks()).isGreaterThanOrEqualTo(2);
		this.proxy.heal();
		long delayed = this.proxy.stats().delayedChunks();
		selectOne(connection);
		assertThat(this.proxy.stats().delayedChunks()).isEqualTo(delayed);
	}

	@Test
	void droppedConnectionsAreResetOnBothSidesAndNewOnesWork() throws Exception {
		Connection first = throughProxy("dropped", 10);
		Connection second = throughProxy("dropped", 10);
		assertThat(backends("dropped")).isEqualTo(2);
		assertThat(this.proxy.dropConnections()).isEqualTo(2);
		for (Connection connection : List.of(first, second)) {
			// an RST, not an orderly close: a SocketException, not an end of stream
			assertThatExceptionOfType(SQLException.class).isThrownBy(() -> selectOne(connection))
				.satisfies((ex) -> assertThat(causes(ex)).anySatisfy((cause) -> assertThat(cause)
					.isInstanceOf(SocketException.class)
					.hasMessageMatching("(?i).*(reset|broken pipe).*")))
				.satisfies((ex) -> assertThat(causes(ex)).noneMatch(EOFException.class::isInstance));
		}
		// the server saw the reset too: its backends are gone
		awaitBackends("dropped", 0);
		assertThat(this.proxy.stats().reset()).isEqualTo(2);
		assertThat(this.proxy.stats().open()).isZero();
		selectOne(throughProxy("dropped", 10));
	}

	@Test
	void aBlackHoleAnswersNothingClosesNothingAndDeliversWhatItHeldOnceItHeals() throws Exception {
		Connection connection = throughProxy("black-hole", 1);
		this.proxy.blackHole();
		// the client waits out its timeout: no answer, and neither a reset nor an end of stream
		assertThatExceptionOfType(SQLException.class)
			.isThrownBy(() -> connection.createStatement().execute("INSERT INTO effects VALUES (1)"))
			.satisfies((ex) -> assertThat(causes(ex)).anyMatch(SocketTimeoutException.class::isInstance));
		// a new connection is accepted, and left without an answer (the driver may try a
		// second one before its login timeout)
		assertThatExceptionOfType(SQLException.class).isThrownBy(() -> throughProxy("black-hole-new", 1));
		assertThat(this.proxy.stats().heldConnections()).isPositive();
		assertThat(this.proxy.stats().heldBytes()).isPositive();
		// the client closed its connection when it timed out: the proxy saw the FIN, and
		// forwarded nothing (the new connection is not even connected to the server)
		awaitAbandoned(1);
		// the statement never reached the server
		Thread.sleep(500);
		assertThat(effects()).isZero();
		this.proxy.heal();
		// what the black hole held goes through, although its client gave up on it
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (effects() == 0 && System.nanoTime() < deadline) {
			Thread.sleep(50);
		}
		assertThat(effects()).isEqualTo(1);
		selectOne(throughProxy("black-hole", 10));
	}

	@Test
	void aHalfOpenConnectionRunsTheStatementButHoldsBackItsAnswer() throws Exception {
		Connection connection = throughProxy("half-open", 1);
		this.proxy.holdAnswers();
		assertThatExceptionOfType(SQLException.class)
			.isThrownBy(() -> connection.createStatement().execute("INSERT INTO effects VALUES (1)"))
			.satisfies((ex) -> assertThat(causes(ex)).anyMatch(SocketTimeoutException.class::isInstance));
		// while the answers are held, the server has committed what the client thinks failed
		assertThat(effects()).isEqualTo(1);
		assertThat(this.proxy.stats().heldBytes()).isPositive();
		awaitAbandoned(1);
		this.proxy.heal();
		selectOne(throughProxy("half-open", 10));
	}

	@Test
	void droppedAnswersResetTheClientAfterTheServerHandledTheRequest() throws Exception {
		AtomicInteger handled = new AtomicInteger();
		HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
		server.createContext("/", (exchange) -> {
			exchange.getRequestBody().readAllBytes();
			handled.incrementAndGet();
			byte[] body = "applied".getBytes(StandardCharsets.UTF_8);
			exchange.sendResponseHeaders(201, body.length);
			exchange.getResponseBody().write(body);
			exchange.close();
		});
		server.start();
		try (NetworkProxy http = new NetworkProxy("http").start(server.getAddress().getPort())
			.dropAnswers(0.5, 7)) {
			HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
			int answered = 0;
			int failed = 0;
			for (int i = 0; i < 40; i++) {
				HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + http.port() + "/"))
					.timeout(Duration.ofSeconds(10))
					.POST(HttpRequest.BodyPublishers.ofString("request " + i))
					.build();
				try {
					HttpResponse<String> response = client.send(request, HttpResponse.BodyHandlers.ofString());
					assertThat(response.statusCode()).isEqualTo(201);
					assertThat(response.body()).isEqualTo("applied");
					answered++;
				}
				catch (IOException ex) {
					failed++;
				}
			}
			// every request reached the server; the client lost the answers the proxy dropped
			assertThat(handled).hasValue(40);
			assertThat(answered).isBetween(5, 35);
			assertThat(http.stats().droppedAnswers()).isEqualTo(failed).isEqualTo(40 - answered);
		}
		finally {
			server.stop(0);
		}
	}

	private Connection throughProxy(String applicationName, int socketTimeoutSeconds) throws SQLException {
		Properties properties = new Properties();
		properties.setProperty("user", "postgres");
		properties.setProperty("password", "postgres");
		properties.setProperty("ApplicationName", applicationName);
		properties.setProperty("socketTimeout", Integer.toString(socketTimeoutSeconds));
		properties.setProperty("loginTimeout", Integer.toString(socketTimeoutSeconds));
		Connection connection = DriverManager
			.getConnection("jdbc:postgresql://127.0.0.1:" + this.proxy.port() + "/postgres", properties);
		this.connections.add(connection);
		return connection;
	}

	private static Connection direct() throws SQLException {
		return DriverManager.getConnection(postgres.jdbcUrl(), "postgres", "postgres");
	}

	private static void selectOne(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement(); ResultSet result = statement.executeQuery("SELECT 1")) {
			assertThat(result.next()).isTrue();
		}
	}

	private static long effects() throws SQLException {
		return count("SELECT count(*) FROM effects");
	}

	private static long backends(String applicationName) throws SQLException {
		return count("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + applicationName + "'");
	}

	private static void awaitBackends(String applicationName, long expected) throws Exception {
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (backends(applicationName) != expected && System.nanoTime() < deadline) {
			Thread.sleep(50);
		}
		assertThat(backends(applicationName)).isEqualTo(expected);
	}

	private void awaitAbandoned(long expected) throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
		while (this.proxy.stats().abandoned() < expected && System.nanoTime() < deadline) {
			Thread.sleep(20);
		}
		assertThat(this.proxy.stats().abandoned()).isEqualTo(expected);
	}

	private static long count(String sql) throws SQLException {
		try (Connection direct = direct();
				Statement statement = direct.createStatement();
				ResultSet result = statement.executeQuery(sql)) {
			result.next();
			return result.getLong(1);
		}
	}

	private static List<Throwable> causes(Throwable throwable) {
		List<Throwable> causes = new ArrayList<>();
		for (Throwable cause = throwable; cause != null && !causes.contains(cause); cause = cause.getCause()) {
			causes.add(cause);
		}
		return causes;
	}

}
