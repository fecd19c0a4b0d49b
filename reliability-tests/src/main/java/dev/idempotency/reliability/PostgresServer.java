package dev.idempotency.reliability;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import io.zonky.test.db.postgres.util.LinuxUtils;

/**
 * PostgreSQL from the zonky binaries, on a data directory of the driver's own and a port
 * picked at start, so that it can be stopped ({@code pg_ctl stop}) and started again on
 * the same port with the same data, or crashed: every process of the server killed with
 * SIGKILL, then started again on the same data, which makes it run crash recovery.
 * <p>
 * It runs durable by default ({@code fsync}, {@code synchronous_commit} and
 * {@code full_page_writes} on): a commit is acknowledged once its WAL is flushed. The
 * server's own log is {@code postgresql.log} next to the data directory.
 */
final class PostgresServer {

	/** What the log says when a start finds that the server did not shut down. */
	static final String INTERRUPTED = "database system was interrupted";

	private static final Map<String, String> DURABLE = Map.of("fsync", "on", "synchronous_commit", "on",
			"full_page_writes", "on");

	private final Path dataDirectory;

	private final Path log;

	private final Map<String, String> settings = new LinkedHashMap<>();

	private final int port = Ports.free();

	private EmbeddedPostgres postgres;

	PostgresServer(Path directory) throws IOException {
		this(directory, Map.of());
	}

	/**
	 * A server whose settings are the durable defaults with {@code overrides} applied,
	 * e.g. {@code synchronous_commit=off} for a negative control.
	 */
	PostgresServer(Path directory, Map<String, String> overrides) throws IOException {
		this.dataDirectory = Files.createDirectories(directory);
		this.log = directory.resolveSibling(directory.getFileName() + "-log").toAbsolutePath();
		Files.createDirectories(this.log);
		this.settings.put("max_connections", "100");
		// zonky passes -F (fsync off) and synchronous_commit=off by default; these come after
		this.settings.putAll(DURABLE);
		this.settings.put("logging_collector", "on");
		this.settings.put("log_directory", this.log.toString());
		this.settings.put("log_filename", "postgresql.log");
		this.settings.putAll(overrides);
	}

	synchronized void start() throws IOException {
		EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
			.setDataDirectory(this.dataDirectory)
			.setCleanDataDirectory(false)
			.setPort(this.port)
			.setPGStartupWait(Duration.ofSeconds(60));
		this.settings.forEach(builder::setServerConfig);
		this.postgres = builder.start();
	}

	synchronized void stop() throws IOException {
		if (this.postgres != null) {
			this.postgres.close();
			this.postgres = null;
		}
	}

	/**
	 * Crash the server as a kill of all its processes would: the postmaster is frozen
	 * (SIGSTOP) so that it forks no process while its children are listed, then the
	 * postmaster and every child are killed with SIGKILL, and the method returns once all
	 * are gone. A SIGKILL of the postmaster alone would leave its backends running (each
	 * child of the postmaster is the leader of a process group of its own, so a kill of
	 * the postmaster's group would too) until they notice that it died. Nothing of the
	 * server runs its shutdown: the data directory is left as a crash leaves it, with its
	 * {@code postmaster.pid}.
	 * @return the crashed postmaster's PID and how many processes were killed
	 */
	synchronized Crash crash() throws IOException, InterruptedException {
		long postmaster = postmasterPid();
		if (signal("STOP", List.of(postmaster)) != 0) {
			throw new IllegalStateException("No postmaster with PID " + postmaster + " to crash");
		}
		List<Long> processes = new ArrayList<>();
		processes.add(postmaster);
		ProcessHandle.of(postmaster)
			.ifPresent((handle) -> handle.children().forEach((child) -> processes.add(child.pid())));
		// a child that exited since it was listed makes kill(1) fail; what counts is below
		signal("KILL", processes);
		// a killed process is gone once it is reaped: until then its PID is taken, and
		// the start after the crash would take postmaster.pid for a running server's
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
		for (long pid : processes) {
			while (Files.exists(Path.of("/proc", Long.toString(pid)))) {
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("PostgreSQL process " + pid + " still exists 60 s after SIGKILL");
				}
				Thread.sleep(20);
			}
		}
		return new Crash(postmaster, processes.size());
	}

	/**
	 * Start the server after {@link #crash()} on the same data directory and port, with
	 * the options of the crashed postmaster (its {@code postmaster.opts}), and wait until
	 * it accepts connections: it runs crash recovery first.
	 */
	synchronized void startAfterCrash() throws IOException, InterruptedException {
		String options = Files.readString(this.dataDirectory.resolve("postmaster.opts")).strip();
		// the binary's path, then its arguments, each in double quotes
		int arguments = options.indexOf(" \"");
		Path pgCtl = Path.of(options.substring(0, arguments)).resolveSibling("pg_ctl");
		List<String> command = new ArrayList<>();
		if (LinuxUtils.isUnshareAvailable()) {
			// as zonky starts it: PostgreSQL refuses to run as root
			command.addAll(List.of("unshare", "-U"));
		}
		command.addAll(List.of(pgCtl.toString(), "-D", this.dataDirectory.toString(), "-o",
				options.substring(arguments + 1), "-w", "-t", "120", "start"));
		Process start = new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(ProcessBuilder.Redirect.appendTo(this.log.resolve("pg_ctl.log").toFile()))
			.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
			.start();
		if (!start.waitFor(150, TimeUnit.SECONDS) || start.exitValue() != 0) {
			start.destroyForcibly();
			throw new IllegalStateException("PostgreSQL did not start after the crash; see " + this.log);
		}
	}

	/** The PID of the running postmaster, from {@code postmaster.pid}. */
	long postmasterPid() throws IOException {
		return Long.parseLong(Files.readAllLines(this.dataDirectory.resolve("postmaster.pid")).get(0).strip());
	}

	/**
	 * The lines of the server's log that contain {@code text}, e.g. {@link #INTERRUPTED}
	 * or {@code "redo "}.
	 */
	List<String> logLines(String text) throws IOException {
		Path file = this.log.resolve("postgresql.log");
		if (!Files.exists(file)) {
			return List.of();
		}
		try (var lines = Files.lines(file)) {
			return lines.filter((line) -> line.contains(text)).toList();
		}
	}

	/**
	 * Wait until the server's log shows {@code count} starts that found the server
	 * interrupted, i.e. ran crash recovery (the log is written by a process of its own,
	 * a little after the server accepts connections).
	 * @return whether it did within the timeout
	 */
	boolean awaitRecoveries(int count, Duration timeout) throws IOException, InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (logLines(INTERRUPTED).size() < count) {
			if (System.nanoTime() > deadline) {
				return false;
			}
			Thread.sleep(100);
		}
		return true;
	}

	String jdbcUrl() {
		return "jdbc:postgresql://127.0.0.1:" + this.port + "/postgres";
	}

	int port() {
		return this.port;
	}

	Path log() {
		return this.log.resolve("postgresql.log");
	}

	private static int signal(String signal, List<Long> pids) throws IOException, InterruptedException {
		List<String> command = new ArrayList<>(List.of("kill", "-" + signal));
		pids.forEach((pid) -> command.add(Long.toString(pid)));
		return new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(ProcessBuilder.Redirect.DISCARD)
			.start()
			.waitFor();
	}

	/**
	 * A crash of the server.
	 * @param postmasterPid the PID of the postmaster that was killed
	 * @param processes how many processes were killed, the postmaster included
	 */
	record Crash(long postmasterPid, int processes) {

	}

}
