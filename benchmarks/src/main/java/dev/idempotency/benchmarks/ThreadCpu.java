package dev.idempotency.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * CPU time of every thread of this process, Java or native (RocksDB's background threads
 * are not Java threads), from {@code /proc/self/task}, grouped by thread name with digits
 * removed. Empty where {@code /proc} is not available.
 */
final class ThreadCpu {

	private static final long TICK_NANOS = 10_000_000L; // USER_HZ = 100 on Linux

	private ThreadCpu() {
	}

	static Map<String, Long> snapshot() {
		Map<String, Long> nanos = new TreeMap<>();
		Path tasks = Path.of("/proc/self/task");
		if (!Files.isDirectory(tasks)) {
			return nanos;
		}
		try (Stream<Path> threads = Files.list(tasks)) {
			threads.forEach((task) -> {
				try {
					String stat = Files.readString(task.resolve("stat"));
					int open = stat.indexOf('(');
					int close = stat.lastIndexOf(')');
					String name = stat.substring(open + 1, close).replaceAll("[0-9]+", "#");
					String[] fields = stat.substring(close + 2).split(" ");
					// fields[11] and [12] are utime and stime (fields 14 and 15 of stat)
					long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
					nanos.merge(name, ticks * TICK_NANOS, Long::sum);
				}
				catch (IOException | RuntimeException ex) {
					// the thread ended meanwhile
				}
			});
		}
		catch (IOException ex) {
			// no breakdown
		}
		return nanos;
	}

	/**
	 * Describe the CPU spent between two snapshots, per record, largest first.
	 */
	static String perRecord(Map<String, Long> before, Map<String, Long> after, long records) {
		Map<String, Long> spent = new TreeMap<>();
		after.forEach((name, nanos) -> spent.put(name, nanos - before.getOrDefault(name, 0L)));
		long total = spent.values().stream().mapToLong(Long::longValue).sum();
		StringBuilder line = new StringBuilder(String.format("total %.2f µs/record:", total / 1e3 / records));
		spent.entrySet()
			.stream()
			.filter((entry) -> entry.getValue() > 0)
			.sorted(Map.Entry.<String, Long>comparingByValue().reversed())
			.forEach((entry) -> line.append(String.format(" [%s] %.2f", entry.getKey(), entry.getValue() / 1e3 / records)));
		return line.toString();
	}

}
