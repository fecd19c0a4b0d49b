package dev.idempotency.sample;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import redis.embedded.RedisServer;

/**
 * A Redis server process started from the embedded-redis binary, owned by the sample: it
 * is stopped when the sample closes it and at no other time.
 * <p>
 * embedded-redis's own {@code RedisServer} registers a JVM shutdown hook that stops Redis
 * while the context still closes (its clients still connected), and starts Redis in the
 * application's process group, so that a Ctrl-C in the terminal stops it too. This class
 * uses the library only for the binary and its arguments, and starts Redis in a session
 * of its own where {@code setsid} is available.
 */
final class EmbeddedRedis {

	private static final String READY = "Ready to accept connections";

	private static final long START_TIMEOUT_SECONDS = 60;

	private static final long STOP_TIMEOUT_SECONDS = 30;

	private final Process process;

	private EmbeddedRedis(Process process) {
		this.process = process;
	}

	/**
	 * Start Redis on 127.0.0.1, without persistence, and wait until it accepts
	 * connections.
	 * @param port the port to listen on
	 * @return the running server
	 * @throws IOException if Redis could not be started or did not get ready
	 */
	static EmbeddedRedis start(int port) throws IOException {
		List<String> arguments = RedisServer.newRedisServer()
			.port(port)
			.bind("127.0.0.1")
			.setting("save \"\"")
			.setting("appendonly no")
			.buildCommandArgs();
		List<String> command = new ArrayList<>();
		setsid().ifPresent(command::add);
		command.addAll(arguments);
		Process process = new ProcessBuilder(command).directory(new File(arguments.get(0)).getParentFile())
			.redirectErrorStream(true)
			.start();
		CountDownLatch ready = new CountDownLatch(1);
		Thread output = new Thread(() -> drain(process, ready), "embedded-redis-" + port);
		output.setDaemon(true);
		output.start();
		try {
			if (!ready.await(START_TIMEOUT_SECONDS, TimeUnit.SECONDS) || !process.isAlive()) {
				process.destroyForcibly();
				throw new IOException("Redis did not get ready on port " + port + " in " + START_TIMEOUT_SECONDS + " s");
			}
		}
		catch (InterruptedException ex) {
			process.destroyForcibly();
			Thread.currentThread().interrupt();
			throw new IOException("Interrupted while Redis started", ex);
		}
		return new EmbeddedRedis(process);
	}

	/**
	 * Stop Redis (SIGTERM, a clean shutdown) and wait until its process ended.
	 */
	void stop() {
		this.process.destroy();
		try {
			if (!this.process.waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
				this.process.destroyForcibly().waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS);
			}
		}
		catch (InterruptedException ex) {
			this.process.destroyForcibly();
			Thread.currentThread().interrupt();
		}
	}

	// Redis writes little; its output is read so that it never blocks on a full pipe
	private static void drain(Process process, CountDownLatch ready) {
		try (BufferedReader reader = new BufferedReader(
				new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
			String line;
			while ((line = reader.readLine()) != null) {
				if (line.contains(READY)) {
					ready.countDown();
				}
			}
		}
		catch (IOException ex) {
			// the process ended
		}
		finally {
			// wakes up start() when Redis exits before it got ready
			ready.countDown();
		}
	}

	// util-linux's setsid detaches Redis from the terminal's process group (Linux only)
	private static Optional<String> setsid() {
		for (String directory : List.of("/usr/bin", "/bin")) {
			Path setsid = Path.of(directory, "setsid");
			if (Files.isExecutable(setsid)) {
				return Optional.of(setsid.toString());
			}
		}
		return Optional.empty();
	}

}
