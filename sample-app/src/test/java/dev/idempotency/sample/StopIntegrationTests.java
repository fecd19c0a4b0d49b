package dev.idempotency.sample;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The sample run as an application of its own, with its embedded servers, stops cleanly:
 * a SIGTERM (what a process manager sends) and a Ctrl-C (a SIGINT to the terminal's whole
 * process group, the application's child processes included) close it without an ERROR
 * or a WARN line, its child processes end with it, and it exits: 0 on SIGTERM, 130 on
 * Ctrl-C (the JVM's code for SIGINT, which {@code spring-boot:run} takes as a normal end).
 * <p>
 * Both applications start at once. Each runs in a session of its own ({@code setsid}),
 * as if from a terminal, with SIGINT handled the default way ({@code env
 * --default-signal}) even when the build itself runs in the background, where SIGINT is
 * ignored and children inherit that.
 */
@EnabledOnOs(OS.LINUX)
class StopIntegrationTests {

	private static final Duration START_TIMEOUT = Duration.ofMinutes(6);

	private static final Duration STOP_TIMEOUT = Duration.ofMinutes(2);

	private static final Pattern STARTED = Pattern.compile("Started PaymentsLedgerApplication in ");

	// the sample's two listeners got their partitions: it runs as it will until stopped
	private static final List<Pattern> RUNNING = List.of(STARTED, Pattern.compile("ledger: partitions assigned"),
			Pattern.compile("statements: partitions assigned"));

	// Boot's console pattern: the timestamp, then the level
	private static final Pattern ERROR_OR_WARN = Pattern.compile("^\\S+\\s+(ERROR|WARN)\\s");

	private static Sample terminated;

	private static Sample interrupted;

	@BeforeAll
	static void startSamples() {
		Path logs = Path.of("target", "stop-tests");
		terminated = Sample.start(logs.resolve("sigterm.log"));
		interrupted = Sample.start(logs.resolve("ctrl-c.log"));
	}

	@AfterAll
	static void killLeftovers() {
		for (Sample sample : new Sample[] { terminated, interrupted }) {
			if (sample != null) {
				sample.kill();
			}
		}
	}

	@Test
	void stopsWithoutErrorOrWarningAndExitsZeroOnSigterm() {
		terminated.awaitRunning();
		List<ProcessHandle> children = terminated.children();
		terminated.signal("TERM", false);
		int exitCode = terminated.awaitExit();
		assertThat(terminated.linesSinceStarted()).filteredOn((line) -> ERROR_OR_WARN.matcher(line).find())
			.isEmpty();
		assertThat(exitCode).isZero();
		assertThat(children).isNotEmpty().allSatisfy(Sample::awaitEnded);
	}

	@Test
	void stopsWithoutErrorOrWarningAndExits130OnCtrlC() {
		interrupted.awaitRunning();
		List<ProcessHandle> children = interrupted.children();
		// Redis is the application's to stop, after its clients: Ctrl-C must not reach it
		assertThat(children).isNotEmpty()
			.allSatisfy((child) -> assertThat(Sample.processGroup(child.pid()))
				.isNotEqualTo(Sample.processGroup(interrupted.process.pid())));
		interrupted.signal("INT", true);
		int exitCode = interrupted.awaitExit();
		assertThat(interrupted.linesSinceStarted()).filteredOn((line) -> ERROR_OR_WARN.matcher(line).find())
			.isEmpty();
		assertThat(exitCode).isEqualTo(128 + 2);
		assertThat(children).isNotEmpty().allSatisfy(Sample::awaitEnded);
	}

	/**
	 * The sample's main class in a JVM of its own, on the tests' class path, its output in
	 * a log file.
	 */
	private static final class Sample {

		private final Process process;

		private final Path log;

		private Sample(Process process, Path log) {
			this.process = process;
			this.log = log;
		}

		static Sample start(Path log) {
			List<String> command = new ArrayList<>(List.of("setsid", "env", "--default-signal=INT"));
			command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
			command.addAll(List.of("-XX:TieredStopAtLevel=1", "-cp", classPath(),
					PaymentsLedgerApplication.class.getName(), "--server.port=0"));
			try {
				Files.createDirectories(log.getParent());
				Process process = new ProcessBuilder(command).redirectErrorStream(true)
					.redirectOutput(log.toFile())
					.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
					.start();
				return new Sample(process, log);
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
		}

		// under Surefire java.class.path may be a manifest-only jar; the full path is here
		private static String classPath() {
			String surefire = System.getProperty("surefire.test.class.path");
			return (surefire != null && !surefire.isBlank()) ? surefire : System.getProperty("java.class.path");
		}

		void awaitRunning() {
			await("the sample's start (" + this.log + ")").atMost(START_TIMEOUT)
				.pollInterval(Duration.ofMillis(200))
				.until(() -> !this.process.isAlive() || RUNNING.stream().allMatch(this::logged));
			assertThat(this.process.isAlive()).as("the sample runs (see %s)", this.log).isTrue();
		}

		private boolean logged(Pattern pattern) {
			return lines().stream().anyMatch((line) -> pattern.matcher(line).find());
		}

		List<ProcessHandle> children() {
			return this.process.descendants().toList();
		}

		// the fifth field of /proc/<pid>/stat, after the command name in parentheses
		static long processGroup(long pid) {
			try {
				String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
				String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
				return Long.parseLong(fields[2]);
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
		}

		/**
		 * Send a signal to the sample, or to its whole process group (setsid made it the
		 * group's leader), as a terminal does on Ctrl-C.
		 */
		void signal(String signal, boolean group) {
			String target = (group ? "-" : "") + this.process.pid();
			try {
				Process kill = new ProcessBuilder("kill", "-" + signal, "--", target).inheritIO().start();
				assertThat(kill.waitFor(30, TimeUnit.SECONDS)).isTrue();
				assertThat(kill.exitValue()).isZero();
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException(ex);
			}
		}

		int awaitExit() {
			await("the sample's exit (" + this.log + ")").atMost(STOP_TIMEOUT)
				.pollInterval(Duration.ofMillis(200))
				.until(() -> !this.process.isAlive());
			return this.process.exitValue();
		}

		static void awaitEnded(ProcessHandle child) {
			await("the end of " + child.info().command().orElse("pid " + child.pid())).atMost(STOP_TIMEOUT)
				.pollInterval(Duration.ofMillis(200))
				.until(() -> !child.isAlive());
		}

		List<String> linesSinceStarted() {
			List<String> lines = lines();
			for (int i = 0; i < lines.size(); i++) {
				if (STARTED.matcher(lines.get(i)).find()) {
					return lines.subList(i + 1, lines.size());
				}
			}
			return lines;
		}

		private List<String> lines() {
			try {
				return new String(Files.readAllBytes(this.log), StandardCharsets.UTF_8).lines().toList();
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
		}

		void kill() {
			this.process.descendants().forEach(ProcessHandle::destroyForcibly);
			this.process.destroyForcibly();
		}

	}

}
