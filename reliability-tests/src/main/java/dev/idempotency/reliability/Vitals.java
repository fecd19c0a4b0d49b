package dev.idempotency.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a soak watches, read from outside the workload processes: for each process its heap
 * after a full collection ({@code jcmd GC.run}, then {@code GC.heap_info}), its threads
 * ({@code /proc/<pid>/status}) and its open connections to each server (its sockets in
 * {@code /proc/<pid>/fd} whose peer is that server's proxy port, by {@code /proc/net/tcp}
 * and {@code tcp6}); and the rows and bytes of {@code processed_messages} and of the
 * outbox. Read at the start of the window and after the drain, and compared.
 */
final class Vitals {

	private static final Pattern HEAP_USED = Pattern.compile("(?:generation|heap)\\s+total \\d+K, used (\\d+)K");

	private static final Pattern THREADS = Pattern.compile("(?m)^Threads:\\s+(\\d+)");

	private static final Pattern SOCKET = Pattern.compile("socket:\\[(\\d+)]");

	private static final String ESTABLISHED = "01";

	private Vitals() {
	}

	/**
	 * One workload process.
	 *
	 * @param name its name
	 * @param pid its process id
	 * @param heapAfterGcKb heap in use after a full collection, -1 if it could not be read
	 * @param threads its threads (the JVM's own included), -1 if unknown
	 * @param connections established connections to each server (by name), through its proxy
	 */
	record Process(String name, long pid, long heapAfterGcKb, int threads, Map<String, Integer> connections) {

		@Override
		public String toString() {
			return String.format("%s pid=%d heap_after_gc_mb=%.1f threads=%d connections=%s", this.name, this.pid,
					this.heapAfterGcKb / 1024.0, this.threads, this.connections);
		}

	}

	/**
	 * The tables that grow with the events.
	 *
	 * @param processedRows rows of {@code processed_messages}
	 * @param processedBytes its size with indexes and TOAST
	 * @param outboxRows rows of the outbox
	 * @param outboxBytes its size with indexes and TOAST (dead tuples included)
	 */
	record Tables(long processedRows, long processedBytes, long outboxRows, long outboxBytes) {

		@Override
		public String toString() {
			return String.format("processed_messages rows=%d size_mb=%.1f outbox rows=%d size_mb=%.1f",
					this.processedRows, this.processedBytes / 1048576.0, this.outboxRows, this.outboxBytes / 1048576.0);
		}

	}

	/**
	 * A reading.
	 *
	 * @param label when it was taken
	 * @param processes the processes that were running and not paused
	 * @param tables the tables
	 */
	record Sample(String label, List<Process> processes, Tables tables) {

		List<String> lines() {
			List<String> lines = new ArrayList<>();
			this.processes.forEach((process) -> lines.add("vitals " + this.label + " " + process));
			lines.add("vitals " + this.label + " " + this.tables);
			return lines;
		}

	}

	/**
	 * Read the vitals of the running processes and of the tables.
	 * @param label when
	 * @param processes the workload processes (paused or stopped ones are left out)
	 * @param proxyPorts the proxy ports of each server, by name (a cluster's brokers have one
	 * each)
	 * @param jdbcUrl the database, reached directly
	 * @return the reading
	 */
	static Sample sample(String label, List<JavaProcess> processes, Map<String, List<Integer>> proxyPorts,
			String jdbcUrl) {
		List<Process> read = new ArrayList<>();
		for (JavaProcess process : processes) {
			if (!process.isAlive() || process.isPaused()) {
				continue;
			}
			long pid = process.pid();
			read.add(new Process(process.name(), pid, heapAfterGc(pid), threads(pid), connections(pid, proxyPorts)));
		}
		return new Sample(label, read, tables(jdbcUrl));
	}

	/**
	 * Compare two readings: per process name, and the tables.
	 * @param start the first
	 * @param end the last
	 * @return one line per process and one for the tables
	 */
	static List<String> compare(Sample start, Sample end) {
		List<String> lines = new ArrayList<>();
		for (Process last : end.processes) {
			Process first = start.processes.stream().filter((p) -> p.name.equals(last.name)).findFirst().orElse(null);
			if (first == null) {
				lines.add("vitals growth " + last.name + ": not running at the start");
				continue;
			}
			Map<String, String> connections = new LinkedHashMap<>();
			last.connections.forEach((server, count) -> connections.put(server,
					first.connections.getOrDefault(server, 0) + "->" + count));
			lines.add(String.format("vitals growth %s%s: heap_after_gc_mb %.1f->%.1f threads %d->%d connections %s",
					last.name, (first.pid != last.pid) ? " (restarted since)" : "", first.heapAfterGcKb / 1024.0,
					last.heapAfterGcKb / 1024.0, first.threads, last.threads, connections));
		}
		lines.add(String.format(
				"vitals growth tables: processed_messages rows %d->%d (%+.1f MB) outbox rows %d->%d (%+.1f MB)",
				start.tables.processedRows, end.tables.processedRows,
				(end.tables.processedBytes - start.tables.processedBytes) / 1048576.0, start.tables.outboxRows,
				end.tables.outboxRows, (end.tables.outboxBytes - start.tables.outboxBytes) / 1048576.0));
		return lines;
	}

	private static long heapAfterGc(long pid) {
		if (run(jcmd(), Long.toString(pid), "GC.run") == null) {
			return -1;
		}
		String info = run(jcmd(), Long.toString(pid), "GC.heap_info");
		return (info != null) ? heapUsedKb(info) : -1;
	}

	/**
	 * The heap in use, in KB, as {@code jcmd GC.heap_info} prints it: the sum of the
	 * generations (Serial, Parallel) or the whole heap (G1).
	 * @param heapInfo its output
	 * @return the KB in use, -1 if none was printed
	 */
	static long heapUsedKb(String heapInfo) {
		Matcher used = HEAP_USED.matcher(heapInfo);
		long total = -1;
		while (used.find()) {
			total = Math.max(total, 0) + Long.parseLong(used.group(1));
		}
		return total;
	}

	private static int threads(long pid) {
		try {
			Matcher threads = THREADS.matcher(Files.readString(Path.of("/proc", Long.toString(pid), "status")));
			return threads.find() ? Integer.parseInt(threads.group(1)) : -1;
		}
		catch (IOException ex) {
			return -1;
		}
	}

	private static Map<String, Integer> connections(long pid, Map<String, List<Integer>> proxyPorts) {
		Set<String> sockets = new HashSet<>();
		try (var fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
			fds.forEach((fd) -> {
				try {
					Matcher socket = SOCKET.matcher(Files.readSymbolicLink(fd).toString());
					if (socket.matches()) {
						sockets.add(socket.group(1));
					}
				}
				catch (IOException ex) {
					// closed meanwhile
				}
			});
		}
		catch (IOException ex) {
			return Map.of();
		}
		Map<String, Integer> counts = new LinkedHashMap<>();
		proxyPorts.keySet().forEach((server) -> counts.put(server, 0));
		for (String table : List.of("tcp", "tcp6")) {
			List<String> lines;
			try {
				lines = Files.readAllLines(Path.of("/proc", Long.toString(pid), "net", table));
			}
			catch (IOException ex) {
				continue;
			}
			for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
				String[] fields = line.trim().split("\\s+");
				if (fields.length < 10 || !ESTABLISHED.equals(fields[3]) || !sockets.contains(fields[9])) {
					continue;
				}
				int remotePort = Integer.parseInt(fields[2].substring(fields[2].indexOf(':') + 1), 16);
				proxyPorts.forEach((server, ports) -> {
					if (ports.contains(remotePort)) {
						counts.merge(server, 1, Integer::sum);
					}
				});
			}
		}
		return counts;
	}

	private static Tables tables(String jdbcUrl) {
		try (Connection connection = DriverManager.getConnection(jdbcUrl, "postgres", "postgres");
				Statement statement = connection.createStatement();
				ResultSet sizes = statement.executeQuery("""
						SELECT (SELECT count(*) FROM processed_messages),
						       pg_total_relation_size('processed_messages'),
						       (SELECT count(*) FROM outbox),
						       pg_total_relation_size('outbox')""")) {
			sizes.next();
			return new Tables(sizes.getLong(1), sizes.getLong(2), sizes.getLong(3), sizes.getLong(4));
		}
		catch (SQLException ex) {
			return new Tables(-1, -1, -1, -1);
		}
	}

	private static String jcmd() {
		return Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
	}

	// the command's output, or null when it failed or took longer than 30 s
	private static String run(String... command) {
		Path output = null;
		try {
			// to a file: a process that stopped answering (paused meanwhile) cannot block the read
			output = Files.createTempFile("vitals", ".txt");
			java.lang.Process process = new ProcessBuilder(command).redirectErrorStream(true)
				.redirectOutput(output.toFile())
				.start();
			if (!process.waitFor(30, TimeUnit.SECONDS) || process.exitValue() != 0) {
				process.destroyForcibly();
				return null;
			}
			return Files.readString(output);
		}
		catch (IOException ex) {
			return null;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return null;
		}
		finally {
			if (output != null) {
				try {
					Files.deleteIfExists(output);
				}
				catch (IOException ex) {
					// a temporary file left behind
				}
			}
		}
	}

}
