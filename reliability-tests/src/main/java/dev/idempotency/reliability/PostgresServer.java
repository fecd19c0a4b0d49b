package dev.idempotency.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * PostgreSQL from the zonky binaries, on a data directory of the driver's own and a port
 * picked at start, so that it can be stopped ({@code pg_ctl stop}) and started again on
 * the same port with the same data.
 */
final class PostgresServer {

	private final Path dataDirectory;

	private final int port = Ports.free();

	private EmbeddedPostgres postgres;

	PostgresServer(Path directory) throws IOException {
		this.dataDirectory = Files.createDirectories(directory);
	}

	synchronized void start() throws IOException {
		this.postgres = EmbeddedPostgres.builder()
			.setDataDirectory(this.dataDirectory)
			.setCleanDataDirectory(false)
			.setPort(this.port)
			.setServerConfig("max_connections", "100")
			// the faults stop PostgreSQL, they never crash the machine under it
			.setServerConfig("fsync", "off")
			.setPGStartupWait(Duration.ofSeconds(60))
			.start();
	}

	synchronized void stop() throws IOException {
		if (this.postgres != null) {
			this.postgres.close();
			this.postgres = null;
		}
	}

	String jdbcUrl() {
		return "jdbc:postgresql://127.0.0.1:" + this.port + "/postgres";
	}

}
