package dev.idempotency.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The suite's PostgreSQL crash, on its own: that it really crashes the server (a new
 * postmaster, and a start that runs crash recovery), that what was acknowledged as
 * committed survives it when the server runs durable, and, as the negative control, that
 * the check the driver makes after each crash ({@link CrashWitness}) reports the commits
 * a crash loses when the server acknowledges commits before their WAL is written
 * ({@code synchronous_commit=off}, zonky's default, with a WAL writer that waits 10 s).
 */
class PostgresCrashIntegrationTests {

	private static final Path WORK = Path.of(System.getProperty("reliability.work-dir", "target/reliability"));

	@Test
	void whatWasCommittedBeforeASigkillOfEveryPostgresProcessSurvivesCrashRecovery() throws Exception {
		PostgresServer postgres = new PostgresServer(clean("durable"));
		try {
			postgres.start();
			assertThat(setting(postgres, "fsync")).isEqualTo("on");
			assertThat(setting(postgres, "synchronous_commit")).isEqualTo("on");
			assertThat(setting(postgres, "full_page_writes")).isEqualTo("on");
			List<String> lost = crashAfterCommits(postgres);
			assertThat(postgres.logLines("redo starts at")).hasSize(1);
			assertThat(lost).isEmpty();
			assertThat(effects(postgres)).isEqualTo(50);
		}
		finally {
			postgres.stop();
		}
	}

	@Test
	void theCrashCheckCatchesCommitsLostWhenTheyAreAcknowledgedBeforeTheirWalIsWritten() throws Exception {
		PostgresServer postgres = new PostgresServer(clean("asynchronous"),
				Map.of("synchronous_commit", "off", "wal_writer_delay", "10s", "bgwriter_lru_maxpages", "0"));
		try {
			postgres.start();
			assertThat(setting(postgres, "synchronous_commit")).isEqualTo("off");
			List<String> lost = crashAfterCommits(postgres);
			assertThat(lost).anySatisfy((loss) -> assertThat(loss).startsWith("the commit acknowledged just before"))
				.anySatisfy((loss) -> assertThat(loss).contains("effects committed before PostgreSQL crash 1 missing"));
			assertThat(effects(postgres)).isLessThan(50);
		}
		finally {
			postgres.stop();
		}
	}

	// the ledger's tables, checkpointed; then 50 effects committed one by one, the witness,
	// the crash and the start after it: what the crash lost
	private static List<String> crashAfterCommits(PostgresServer postgres) throws Exception {
		new LedgerDatabase(postgres.jdbcUrl()).createSchema(List.of(), 1);
		try (Connection connection = connect(postgres); Statement statement = connection.createStatement()) {
			statement.execute("CHECKPOINT");
		}
		try (Connection connection = connect(postgres);
				PreparedStatement insert = connection.prepareStatement("""
						INSERT INTO transfer_effects (transfer_id, event_id, account, seq, worker)
						VALUES (?, ?, 0, ?, 'test')""")) {
			for (int i = 0; i < 50; i++) {
				insert.setLong(1, i);
				insert.setObject(2, UUID.randomUUID());
				insert.setLong(3, i);
				insert.executeUpdate();
			}
		}
		CrashWitness witness = new CrashWitness(postgres.jdbcUrl(), 1);
		witness.commitBeforeCrash();
		PostgresServer.Crash crash = postgres.crash();
		assertThat(crash.processes()).as("the postmaster and its children").isGreaterThan(1);
		assertThat(ProcessHandle.of(crash.postmasterPid())).isEmpty();
		postgres.startAfterCrash();
		assertThat(postgres.postmasterPid()).isNotEqualTo(crash.postmasterPid());
		assertThat(postgres.awaitRecoveries(1, Duration.ofSeconds(30))).as("crash recovery in %s", postgres.log())
			.isTrue();
		assertThat(postgres.logLines("automatic recovery in progress")).hasSize(1);
		return witness.lostAfterRecovery();
	}

	// a data directory and a log of this run's own
	private static Path clean(String name) throws IOException {
		Path directory = WORK.resolve("pg-crash");
		for (Path path : List.of(directory.resolve(name), directory.resolve(name + "-log"))) {
			if (Files.exists(path)) {
				try (Stream<Path> paths = Files.walk(path)) {
					for (Path each : paths.sorted(Comparator.reverseOrder()).toList()) {
						Files.delete(each);
					}
				}
			}
		}
		return directory.resolve(name);
	}

	private static String setting(PostgresServer postgres, String name) throws SQLException {
		try (Connection connection = connect(postgres);
				ResultSet value = connection.createStatement().executeQuery("SHOW " + name)) {
			value.next();
			return value.getString(1);
		}
	}

	private static long effects(PostgresServer postgres) throws SQLException {
		try (Connection connection = connect(postgres); Statement statement = connection.createStatement();
				ResultSet count = statement.executeQuery("SELECT count(*) FROM transfer_effects")) {
			count.next();
			return count.getLong(1);
		}
	}

	private static Connection connect(PostgresServer postgres) throws SQLException {
		return DriverManager.getConnection(postgres.jdbcUrl(), "postgres", "postgres");
	}

}
