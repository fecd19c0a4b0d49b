package dev.idempotency.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * How busy each CPU was between two snapshots of {@code /proc/stat}: with the scenario's
 * JVM pinned to CPU 0 and the servers to CPU 1, this says which side a phase waited on.
 * Empty where {@code /proc} is not available.
 */
final class CpuBusy {

	private final long[][] ticks;

	private CpuBusy(long[][] ticks) {
		this.ticks = ticks;
	}

	static CpuBusy snapshot() {
		try {
			List<String> cpus = Files.readAllLines(Path.of("/proc/stat"))
				.stream()
				.filter((line) -> line.matches("cpu[0-9]+ .*"))
				.toList();
			long[][] ticks = new long[cpus.size()][2];
			for (int i = 0; i < cpus.size(); i++) {
				String[] fields = cpus.get(i).trim().split("\\s+");
				long total = 0;
				for (int f = 1; f < fields.length; f++) {
					total += Long.parseLong(fields[f]);
				}
				// idle and iowait are fields 4 and 5
				long idle = Long.parseLong(fields[4]) + Long.parseLong(fields[5]);
				ticks[i][0] = total - idle;
				ticks[i][1] = total;
			}
			return new CpuBusy(ticks);
		}
		catch (IOException | RuntimeException ex) {
			return new CpuBusy(new long[0][]);
		}
	}

	/**
	 * Describe how busy each CPU was since an earlier snapshot.
	 * @param earlier the earlier snapshot
	 * @return for example {@code cpu0 98% cpu1 41%}
	 */
	String since(CpuBusy earlier) {
		StringBuilder busy = new StringBuilder();
		for (int i = 0; i < Math.min(this.ticks.length, earlier.ticks.length); i++) {
			long total = this.ticks[i][1] - earlier.ticks[i][1];
			long used = this.ticks[i][0] - earlier.ticks[i][0];
			busy.append(String.format("cpu%d %d%% ", i, (total > 0) ? Math.round(100.0 * used / total) : 0));
		}
		return busy.toString().trim();
	}

}
