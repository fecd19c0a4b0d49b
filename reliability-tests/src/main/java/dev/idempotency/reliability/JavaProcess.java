package dev.idempotency.reliability;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A JVM started by the driver on the driver's own class path, with its output appended
 * to a log file. It can be killed, paused and resumed with signals, and started again.
 */
final class JavaProcess {

	private final String name;

	private final List<String> command;

	private final Path log;

	private Process process;

	private boolean paused;

	private boolean wanted;

	JavaProcess(String name, List<String> jvmOptions, String mainClass, List<String> arguments, Path log) {
		this.name = name;
		this.log = log;
		List<String> command = new ArrayList<>();
		command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
		command.addAll(jvmOptions);
		command.add("-cp");
		command.add(classPath());
		command.add(mainClass);
		command.addAll(arguments);
		this.command = List.copyOf(command);
	}

	// under Surefire java.class.path may be a manifest-only jar; the full path is here
	static String classPath() {
		String surefire = System.getProperty("surefire.test.class.path");
		return (surefire != null && !surefire.isBlank()) ? surefire : System.getProperty("java.class.path");
	}

	String name() {
		return this.name;
	}

	/** Start the process, unless it runs. */
	synchronized void start() {
		this.wanted = true;
		if (isAlive()) {
			return;
		}
		ProcessBuilder builder = new ProcessBuilder(this.command).redirectErrorStream(true)
			.redirectOutput(ProcessBuilder.Redirect.appendTo(this.log.toFile()))
			.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
		try {
			this.process = builder.start();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		this.paused = false;
	}

	/** Wait for the process to end by itself; its exit code. */
	int waitFor(int timeoutSeconds) {
		if (!awaitExit(timeoutSeconds)) {
			kill();
			throw new IllegalStateException(this.name + " did not end in " + timeoutSeconds + " s");
		}
		return this.process.exitValue();
	}

	synchronized boolean isAlive() {
		return this.process != null && this.process.isAlive();
	}

	/** Whether the process should run but has exited by itself. */
	synchronized boolean hasExited() {
		return this.wanted && !isAlive();
	}

	synchronized boolean isPaused() {
		return this.paused;
	}

	synchronized long pid() {
		return this.process.pid();
	}

	/** SIGKILL, and wait until the process is gone. */
	synchronized void kill() {
		this.wanted = false;
		if (this.process == null) {
			return;
		}
		this.process.destroyForcibly();
		awaitExit(30);
		this.paused = false;
	}

	/** SIGTERM (a graceful stop), then SIGKILL if it takes longer than the timeout. */
	synchronized void stop(int timeoutSeconds) {
		this.wanted = false;
		if (this.process == null || !this.process.isAlive()) {
			return;
		}
		if (this.paused) {
			resume();
		}
		this.process.destroy();
		if (!awaitExit(timeoutSeconds)) {
			kill();
		}
	}

	synchronized void pause() {
		signal("STOP");
		this.paused = true;
	}

	synchronized void resume() {
		signal("CONT");
		this.paused = false;
	}

	private void signal(String signal) {
		try {
			Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(this.process.pid())).inheritIO().start();
			if (kill.waitFor() != 0) {
				throw new IllegalStateException("kill -" + signal + " " + this.process.pid() + " failed");
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	private boolean awaitExit(int seconds) {
		try {
			return this.process.waitFor(seconds, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

	@Override
	public String toString() {
		return this.name;
	}

}
