package dev.idempotency.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.datasource.DriverManagerDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lease-mode listener's payment provider ({@link ChargeStore}) on a real PostgreSQL,
 * counted by the checker's own query: the fence turns a stale caller away, and the
 * checker catches what the lease mode must never do: a stale token accepted (the fence
 * off, the negative control) and a second charge under one token.
 */
class ChargeStoreIntegrationTests {

	private static final Path WORK = Path.of(System.getProperty("reliability.work-dir", "target/reliability"));

	private static final Payment PAYMENT = new Payment(1, 0, 100);

	private static PostgresServer postgres;

	@BeforeAll
	static void start() throws Exception {
		Path directory = WORK.resolve("charge-store");
		if (Files.exists(directory)) {
			try (Stream<Path> paths = Files.walk(directory)) {
				for (Path each : paths.sorted(Comparator.reverseOrder()).toList()) {
					Files.delete(each);
				}
			}
		}
		postgres = new PostgresServer(directory.resolve("postgres"));
		postgres.start();
		new LedgerDatabase(postgres.jdbcUrl()).createPayments(List.of(PAYMENT));
	}

	@AfterAll
	static void stop() throws IOException {
		postgres.stop();
	}

	@BeforeEach
	void emptyTheStore() throws SQLException {
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			statement.execute("TRUNCATE provider.fences, provider.charges");
		}
	}

	@Test
	void theFenceRejectsAStaleTokenAndTheCheckerCountsItFencedNotViolated() throws SQLException {
		ChargeStore store = store(true);
		// the consumer that took the key over charges first; the paused one wakes up late
		assertThat(store.charge(PAYMENT, 17)).isTrue();
		assertThat(store.charge(PAYMENT, 10)).isFalse();
		LeaseCount count = count();
		assertThat(count).isEqualTo(new LeaseCount(1, 1, 0, 0, 0, 1, 0));
		assertThat(count.violations()).isEmpty();
	}

	@Test
	void aChargeRunAgainUnderALargerTokenIsARerun() throws SQLException {
		ChargeStore store = store(true);
		assertThat(store.charge(PAYMENT, 10)).isTrue();
		assertThat(store.charge(PAYMENT, 17)).isTrue();
		assertThat(count()).isEqualTo(new LeaseCount(1, 0, 1, 0, 0, 0, 0));
	}

	@Test
	void theCheckerCatchesAStaleTokenAcceptedWithTheFenceOff() throws SQLException {
		ChargeStore store = store(false);
		assertThat(store.charge(PAYMENT, 17)).isTrue();
		assertThat(store.charge(PAYMENT, 10)).isTrue();
		LeaseCount count = count();
		assertThat(count.fenceViolations()).isEqualTo(1);
		assertThat(count.violations()).containsExactly("1 charges accepted with a token below one seen before");
	}

	@Test
	void theCheckerCatchesASecondChargeUnderOneToken() throws SQLException {
		ChargeStore store = store(true);
		// equal tokens pass the fence, so that a claim run twice shows
		assertThat(store.charge(PAYMENT, 10)).isTrue();
		assertThat(store.charge(PAYMENT, 10)).isTrue();
		assertThat(count().appliedTwice()).isEqualTo(1);
	}

	@Test
	void thePaymentNeverChargedIsLost() throws SQLException {
		assertThat(count().lost()).isEqualTo(1);
	}

	private static ChargeStore store(boolean fenced) {
		return new ChargeStore(new DriverManagerDataSource(postgres.jdbcUrl(), "postgres", "postgres"), "test",
				fenced);
	}

	private static LeaseCount count() throws SQLException {
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			return Checker.leaseCount(statement);
		}
	}

	private static Connection connect() throws SQLException {
		return DriverManager.getConnection(postgres.jdbcUrl(), "postgres", "postgres");
	}

}
