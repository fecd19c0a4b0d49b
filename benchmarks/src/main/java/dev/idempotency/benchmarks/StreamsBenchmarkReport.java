package dev.idempotency.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.benchmarks.StreamsBenchmark.StreamsScenario;

/**
 * Reads the {@code RESULT} lines of a Kafka Streams run and prints one table: the median
 * records/s of each scenario over the rounds (measured half, and whole run), its ratio to
 * the pass-through topology of the same run, the spread of the rounds, and the target.
 */
public final class StreamsBenchmarkReport {

	private StreamsBenchmarkReport() {
	}

	public static void main(String[] args) throws Exception {
		Map<StreamsScenario, List<Double>> steady = new EnumMap<>(StreamsScenario.class);
		Map<StreamsScenario, List<Double>> whole = new EnumMap<>(StreamsScenario.class);
		Map<StreamsScenario, List<Double>> cpu = new EnumMap<>(StreamsScenario.class);
		for (String line : Files.readAllLines(Path.of(args[0]))) {
			if (!line.startsWith("RESULT scenario=S_")) {
				continue;
			}
			StreamsScenario scenario = null;
			double rate = 0;
			double steadyRate = 0;
			double cpuPerRecord = 0;
			for (String field : line.substring(7).split(" ")) {
				String[] pair = field.split("=", 2);
				switch (pair[0]) {
					case "scenario" -> scenario = StreamsScenario.valueOf(pair[1]);
					case "rate" -> rate = Double.parseDouble(pair[1]);
					case "steady" -> steadyRate = Double.parseDouble(pair[1]);
					case "cpuUsPerRecord" -> cpuPerRecord = Double.parseDouble(pair[1]);
					default -> {
					}
				}
			}
			steady.computeIfAbsent(scenario, (s) -> new ArrayList<>()).add(steadyRate);
			whole.computeIfAbsent(scenario, (s) -> new ArrayList<>()).add(rate);
			cpu.computeIfAbsent(scenario, (s) -> new ArrayList<>()).add(cpuPerRecord);
		}
		Double baselineCpu = cpu.containsKey(StreamsScenario.S_PASS) ? median(cpu.get(StreamsScenario.S_PASS)) : null;
		System.out.println();
		System.out.println("Stream-thread CPU per record over the measured half (robust to other load on the machine):");
		System.out.println();
		System.out.println("| scenario | runs | CPU µs per record (median) | min – max | throughput from CPU (records/s) | ratio |");
		System.out.println("| --- | ---: | ---: | --- | ---: | --- |");
		cpu.forEach((scenario, values) -> System.out.printf("| %s | %d | %.2f | %.2f – %.2f | %.0f | %s |%n",
				scenario.name(), values.size(), median(values),
				values.stream().mapToDouble(Double::doubleValue).min().orElse(0),
				values.stream().mapToDouble(Double::doubleValue).max().orElse(0), 1e6 / median(values),
				(baselineCpu == null || scenario == StreamsScenario.S_PASS) ? "baseline"
						: String.format("%.2f × S_PASS", baselineCpu / median(values))));
		if (baselineCpu != null && cpu.containsKey(StreamsScenario.S_NEW)) {
			double cost = 1 - baselineCpu / median(cpu.get(StreamsScenario.S_NEW));
			System.out.printf("%nTarget (by stream-thread CPU): the processor costs at most 30%% on all-new input: %.0f%%  %s%n",
					cost * 100, (cost <= 0.30) ? "met" : "MISSED");
		}
		if (cpu.containsKey(StreamsScenario.S_NEW) && cpu.containsKey(StreamsScenario.S_NEW_BLOOM)) {
			System.out.printf("Bloom pre-check, all new, by CPU: %.2f × the throughput without%n",
					median(cpu.get(StreamsScenario.S_NEW)) / median(cpu.get(StreamsScenario.S_NEW_BLOOM)));
		}
		if (cpu.containsKey(StreamsScenario.S_DUP) && cpu.containsKey(StreamsScenario.S_DUP_BLOOM)) {
			System.out.printf("Bloom pre-check, all duplicates, by CPU: %.2f × the throughput without%n",
					median(cpu.get(StreamsScenario.S_DUP)) / median(cpu.get(StreamsScenario.S_DUP_BLOOM)));
		}
		System.out.println();
		System.out.println("Wall-clock rates (sensitive to other load on the machine):");
		Double baseline = steady.containsKey(StreamsScenario.S_PASS) ? median(steady.get(StreamsScenario.S_PASS))
				: null;
		System.out.println();
		System.out.println("| scenario | what | runs | records/s (median, measured half) | min – max | records/s (median, whole run) | ratio |");
		System.out.println("| --- | --- | ---: | ---: | --- | ---: | --- |");
		steady.forEach((scenario, rates) -> System.out.printf("| %s | %s | %d | %.0f | %.0f – %.0f | %.0f | %s |%n",
				scenario.name(), scenario.description, rates.size(), median(rates),
				rates.stream().mapToDouble(Double::doubleValue).min().orElse(0),
				rates.stream().mapToDouble(Double::doubleValue).max().orElse(0), median(whole.get(scenario)),
				(baseline == null || scenario == StreamsScenario.S_PASS) ? "baseline"
						: String.format("%.2f × S_PASS", median(rates) / baseline)));
		// no verdict from wall-clock rates: on a shared machine they swing by several times
	}

	private static double median(List<Double> values) {
		List<Double> sorted = values.stream().sorted().toList();
		int middle = sorted.size() / 2;
		return (sorted.size() % 2 == 1) ? sorted.get(middle) : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
	}

}
