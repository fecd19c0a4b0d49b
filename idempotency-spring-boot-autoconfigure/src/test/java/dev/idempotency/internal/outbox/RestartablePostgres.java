package dev.idempotency.internal.outbox;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * An embedded PostgreSQL server of a test's own (wal_level = logical), which the test
 * stops and starts again on the same data directory and port, as a restarted server
 * comes back to its clients: the other tests of the JVM keep the shared server of
 * {@link dev.idempotency.test.TestInfrastructure}.
 */
final class RestartablePostgres implements AutoCloseable {

	private final Path dataDirectory;

	private final int port;

	private @Nullable EmbeddedPostgres server;

	private RestartablePostgres(Path dataDirectory, int port) {
		this.dataDirectory = dataDirectory;
		this.port = port;
	}

	/**
	 * Start a server on a new data directory and a free port.
	 * @return the running server
	 * @throws IOException if it cannot start
	 */
	static RestartablePostgres start() throws IOException {
		RestartablePostgres postgres = new RestartablePostgres(Files.createTempDirectory("restartable-postgres-"),
				freePort());
		postgres.startServer();
		return postgres;
	}

	/**
	 * Return the JDBC URL of the server, the same across restarts.
	 * @return the URL
	 */
	String jdbcUrl() {
		return "jdbc:postgresql://localhost:" + this.port + "/postgres?user=postgres";
	}

	/**
	 * A template on the server, outside any application.
	 * @return the template
	 */
	JdbcTemplate jdbc() {
		return new JdbcTemplate(
				new SimpleDriverDataSource(new org.postgresql.Driver(), jdbcUrl(), "postgres", "postgres"));
	}

	/**
	 * Stop the server as {@code pg_ctl stop -m fast} does: the open transactions roll
	 * back, the connections are closed, a checkpoint is written.
	 * @throws IOException if it cannot be stopped
	 */
	void stop() throws IOException {
		EmbeddedPostgres running = this.server;
		if (running != null) {
			this.server = null;
			running.close();
		}
	}

	/**
	 * Start the server again on its data directory and port.
	 * @throws IOException if it cannot start
	 */
	void restart() throws IOException {
		if (this.server != null) {
			throw new IllegalStateException("The server is running");
		}
		startServer();
	}

	private void startServer() throws IOException {
		this.server = EmbeddedPostgres.builder()
			.setDataDirectory(this.dataDirectory)
			.setCleanDataDirectory(false)
			.setPort(this.port)
			.setServerConfig("wal_level", "logical")
			.setServerConfig("max_replication_slots", "4")
			.setServerConfig("max_wal_senders", "4")
			.start();
	}

	/**
	 * Stop the server and delete its data directory.
	 */
	@Override
	public void close() throws IOException {
		stop();
		try (Stream<Path> files = Files.walk(this.dataDirectory)) {
			files.sorted(Comparator.reverseOrder()).forEach((file) -> {
				try {
					Files.deleteIfExists(file);
				}
				catch (IOException ex) {
					throw new UncheckedIOException(ex);
				}
			});
		}
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
	}

}
