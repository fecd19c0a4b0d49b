package dev.idempotency.reliability;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The {@link CheckoutApplication} as a process of its own on PostgreSQL, on one port
 * across restarts, with the directory of the files that hold its handlers.
 */
final class CheckoutServer {

	private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(90);

	private final JavaProcess process;

	private final int port = Ports.free();

	private final Path holds;

	private final Path log;

	private final HttpClient client = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(Duration.ofSeconds(2))
		.build();

	CheckoutServer(String jdbcUrl, Path directory) throws IOException {
		this.holds = Files.createDirectories(directory.resolve("holds"));
		this.log = directory.resolve("checkout.log");
		List<String> arguments = List.of("--spring.main.banner-mode=off", "--logging.level.root=WARN",
				"--server.port=" + this.port, "--spring.datasource.url=" + jdbcUrl,
				"--spring.datasource.username=postgres", "--spring.datasource.password=postgres",
				"--spring.datasource.hikari.maximum-pool-size=4",
				"--spring.datasource.hikari.connection-timeout=2000",
				// no broker: the outbox's relay would look for one
				"--idempotency.outbox.relay-enabled=false", "--checkout.hold-directory=" + this.holds);
		this.process = new JavaProcess("checkout",
				List.of("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k"),
				CheckoutApplication.class.getName(), arguments, this.log);
	}

	/**
	 * Start the process and wait until it answers HTTP.
	 * @return the process id it reports
	 */
	long start() throws IOException, InterruptedException {
		long started = System.nanoTime();
		this.process.start();
		long deadline = started + STARTUP_TIMEOUT.toNanos();
		while (true) {
			if (!this.process.isAlive()) {
				throw new IllegalStateException("The checkout process exited at start-up; see " + this.log);
			}
			try {
				HttpResponse<String> pid = this.client.send(HttpRequest.newBuilder(uri("/pid")).build(),
						HttpResponse.BodyHandlers.ofString());
				if (pid.statusCode() == 200) {
					System.out.printf("checkout process %s answers after %.1f s%n", pid.body(),
							(System.nanoTime() - started) / 1e9);
					return Long.parseLong(pid.body().trim());
				}
			}
			catch (IOException ex) {
				// not listening yet
			}
			if (System.nanoTime() > deadline) {
				throw new IllegalStateException("The checkout process did not answer in " + STARTUP_TIMEOUT
						+ "; see " + this.log);
			}
			Thread.sleep(50);
		}
	}

	/** SIGKILL, and wait until the process is gone. */
	void kill() {
		this.process.kill();
	}

	/** SIGTERM: a graceful stop. */
	void stop() {
		this.process.stop(30);
	}

	boolean isAlive() {
		return this.process.isAlive();
	}

	/** Make the handler hold the requests with this key, until {@link #release}. */
	void hold(String key) throws IOException {
		Files.createFile(this.holds.resolve(key));
	}

	void release(String key) throws IOException {
		Files.deleteIfExists(this.holds.resolve(key));
	}

	URI uri(String path) {
		return URI.create("http://127.0.0.1:" + this.port + path);
	}

	HttpClient client() {
		return this.client;
	}

}
