package dev.idempotency.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads the {@code RESULT} lines of a run and prints one table: the median throughput of
 * each scenario over the rounds, its ratio to the baseline of the same run, and the claim
 * time per record; then the targets and whether this run met them.
 */
public final class BenchmarkReport {

	private BenchmarkReport() {
	}

	public static void main(String[] args) throws Exception {
		Map<Scenario, List<Map<String, String>>> results = new EnumMap<>(Scenario.class);
		Map<String, List<Map<String, String>>> outbox = new TreeMap<>();
		List<Map<String, String>> replication = new ArrayList<>();
		List<Map<String, String>> http = new ArrayList<>();
		for (String line : Files.readAllLines(Path.of(args[0]))) {
			if (!line.startsWith("RESULT ")) {
				continue;
			}
			Map<String, String> fields = new HashMap<>();
			for (String field : line.substring(7).split(" ")) {
				String[] pair = field.split("=", 2);
				fields.put(pair[0], pair[1]);
			}
			if (fields.get("scenario").equals("HTTP")) {
				http.add(fields);
			}
			else if (fields.get("scenario").equals("OUTBOX_REPLICATION")) {
				replication.add(fields);
			}
			else if (fields.get("scenario").startsWith("OUTBOX")) {
				outbox.computeIfAbsent(fields.get("scenario"), (name) -> new ArrayList<>()).add(fields);
			}
			else {
				results.computeIfAbsent(Scenario.valueOf(fields.get("scenario")), (s) -> new ArrayList<>()).add(fields);
			}
		}
		if (!http.isEmpty()) {
			http(http);
		}
		Map<Scenario, Double> steady = new EnumMap<>(Scenario.class);
		results.forEach((scenario, runs) -> steady.put(scenario, median(runs, "steady")));
		System.out.println();
		System.out.println("| scenario | what | runs | msg/s (median, 2nd half) | msg/s (median, whole run) | ratio | claim p50 / p99 per record (µs) |");
		System.out.println("| --- | --- | ---: | ---: | ---: | --- | --- |");
		for (Map.Entry<Scenario, List<Map<String, String>>> entry : results.entrySet()) {
			Scenario scenario = entry.getKey();
			List<Map<String, String>> runs = entry.getValue();
			String claim = runs.get(0).containsKey("claimP50us")
					? String.format("%.0f / %.0f", median(runs, "claimP50us"), median(runs, "claimP99us")) : "-";
			System.out.printf("| %s | %s | %d | %.0f | %.0f | %s | %s |%n", scenario.name(), scenario.description,
					runs.size(), steady.get(scenario), median(runs, "rate"), ratio(scenario, steady), claim);
		}
		System.out.println();
		System.out.println("Targets (ratios of the medians above, same run):");
		target(steady, Scenario.B, Scenario.A, 0.75);
		target(steady, Scenario.C_CACHE, Scenario.A, 3.0);
		target(steady, Scenario.C_NO_CACHE, Scenario.A, 4.0);
		// duplicates against the consumer's own speed: a listener that does nothing
		target(steady, Scenario.C_CACHE, Scenario.NOOP, 0.9);
		target(steady, Scenario.C_NO_CACHE, Scenario.NOOP, 0.7);
		target(steady, Scenario.B_CACHE, Scenario.B, 0.95);
		target(steady, Scenario.E, Scenario.D, 0.8);
		// the batch claim against the least any batch claim costs
		target(steady, Scenario.E, Scenario.E_FLOOR, 0.9);
		perRound(results, Scenario.E, Scenario.E_FLOOR);
		target(steady, Scenario.G_NEW, Scenario.G, 0.75);
		target(steady, Scenario.G_DUP, Scenario.G, 4.0);
		if (results.containsKey(Scenario.G_NEW)) {
			// no slowdown as the table grows: the second half at least as fast as the first
			double first = median(results.get(Scenario.G_NEW), "first");
			double second = steady.get(Scenario.G_NEW);
			System.out.printf("  G_NEW 2nd half >= 1st half: %.0f against %.0f msg/s  %s%n", second, first,
					(second >= first) ? "met" : "MISSED");
		}
		target(steady, Scenario.E, Scenario.B, 8.0);
		if (!outbox.isEmpty()) {
			System.out.println();
			System.out.println("| outbox relay | runs | keys | events/s (median, 1 KB payloads) | plain producer events/s | "
					+ "relay / producer | plain relay events/s | relay / plain relay | two relays events/s | two / one | "
					+ "order violations | latency p50 / p99 at 1,000 events/s (ms) |");
			System.out.println("| --- | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | --- | ---: | --- |");
			outbox.forEach((name, runs) -> outboxRow(name, runs));
			System.out.println("  (ratios: median over the rounds of each round's ratio)");
			outbox.forEach((name, runs) -> outboxTargets(name, runs));
		}
		if (!replication.isEmpty()) {
			replication(replication);
		}
	}

	private static void replication(List<Map<String, String>> runs) {
		System.out.println();
		System.out.println("| replication relay | runs | keys | events/s (median, 1 KB payloads) | plain producer events/s | "
				+ "replication / producer | table relay events/s | replication / table relay | plain table loop events/s "
				+ "| replication / plain loop | order violations | latency p50 / p99 at 1,000 events/s (ms) |");
		System.out.println("| --- | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | --- | ---: | --- |");
		double toProducer = medianOfRatios(runs, "throughput", "producer");
		double toTable = medianOfRatios(runs, "throughput", "tableRelay");
		double p99 = median(runs, "latencyP99ms");
		long violations = violations(runs);
		System.out.printf("| OUTBOX_REPLICATION | %d | %s | %.0f | %.0f | %.2f | %.0f | %.2f | %.0f | %.2f | %d | %.1f / %.1f |%n",
				runs.size(), runs.get(0).get("keys"), median(runs, "throughput"), median(runs, "producer"), toProducer,
				median(runs, "tableRelay"), toTable, median(runs, "plainRelay"),
				medianOfRatios(runs, "throughput", "plainRelay"), violations, median(runs, "latencyP50ms"), p99);
		System.out.println("  (ratios: median over the rounds of each round's ratio)");
		System.out.printf("  replication >= 0.8 x producer: %.2f  %s%n", toProducer,
				(toProducer >= 0.8) ? "met" : String.format("MISSED by %.0f%%", (1 - toProducer / 0.8) * 100));
		System.out.printf("  replication >= 2 x table relay: %.2f  %s%n", toTable,
				(toTable >= 2) ? "met" : String.format("MISSED by %.0f%%", (1 - toTable / 2) * 100));
		System.out.printf("  order violations = 0: %d  %s%n", violations, (violations == 0) ? "met" : "MISSED");
		System.out.printf("  p99 <= 5 ms: %.1f  %s%n", p99, (p99 <= 5) ? "met" : "MISSED");
		// the floor of the table relay, measured beside it
		everyRound("table relay / plain table loop", runs, "tableRelay", "plainRelay", 0.9);
		if (runs.get(0).containsKey("publishUs")) {
			System.out.printf("  write side: Outbox.publish %.1f us/event, a plain insert of the same rows %.1f us/event "
					+ "(%.2f x)%n", median(runs, "publishUs"), median(runs, "insertUs"),
					medianOfRatios(runs, "publishUs", "insertUs"));
		}
	}

	private static void outboxRow(String name, List<Map<String, String>> outbox) {
		boolean baseline = outbox.get(0).containsKey("producer");
		boolean plain = outbox.get(0).containsKey("plainRelay");
		System.out.printf("| %s | %d | %s | %.0f | %.0f | %.2f | %.0f | %.2f | %.0f | %.2f | %d | %.1f / %.1f |%n", name,
				outbox.size(), outbox.get(0).getOrDefault("keys", "100"), median(outbox, "throughput"),
				baseline ? median(outbox, "producer") : Double.NaN,
				baseline ? medianOfRatios(outbox, "throughput", "producer") : Double.NaN,
				plain ? median(outbox, "plainRelay") : Double.NaN,
				plain ? medianOfRatios(outbox, "throughput", "plainRelay") : Double.NaN,
				baseline ? median(outbox, "twoRelays") : Double.NaN,
				baseline ? medianOfRatios(outbox, "twoRelays", "throughput") : Double.NaN, violations(outbox),
				median(outbox, "latencyP50ms"), median(outbox, "latencyP99ms"));
	}

	private static void http(List<Map<String, String>> runs) {
		System.out.println();
		System.out.printf("HTTP, %s requests per phase, %s concurrent, %d rounds (medians):%n",
				runs.get(0).get("requests"), runs.get(0).get("concurrency"), runs.size());
		System.out.println("| handler | requests/s | × plain | p50 / p99 (ms) |");
		System.out.println("| --- | ---: | ---: | --- |");
		System.out.printf("| plain (no @Idempotent) | %.0f | baseline | %.2f / %.2f |%n", median(runs, "plain"),
				median(runs, "plainP50ms"), median(runs, "plainP99ms"));
		System.out.printf("| @Idempotent, new keys | %.0f | %.2f | %.2f / %.2f |%n", median(runs, "new"),
				median(runs, "newRatio"), median(runs, "newP50ms"), median(runs, "newP99ms"));
		System.out.printf("| @Idempotent, all replays | %.0f | %.2f | %.2f / %.2f |%n", median(runs, "replay"),
				median(runs, "replayRatio"), median(runs, "replayP50ms"), median(runs, "replayP99ms"));
		double created = median(runs, "newRatio");
		double replay = median(runs, "replayRatio");
		boolean once = runs.stream().allMatch((run) -> run.get("paymentsOfNewKeys").equals(run.get("requests")));
		System.out.printf("  new >= 0.8 x plain: %.2f  %s%n", created,
				(created >= 0.8) ? "met" : String.format("MISSED by %.0f%%", (1 - created / 0.8) * 100));
		System.out.printf("  replays >= 3 x plain: %.2f  %s%n", replay,
				(replay >= 3) ? "met" : String.format("MISSED by %.0f%%", (1 - replay / 3) * 100));
		System.out.println("  one payment per key after the replays: " + (once ? "yes" : "NO"));
	}

	private static void outboxTargets(String name, List<Map<String, String>> outbox) {
		if (!outbox.get(0).containsKey("producer")) {
			return;
		}
		double relayToProducer = medianOfRatios(outbox, "throughput", "producer");
		double twoToOne = medianOfRatios(outbox, "twoRelays", "throughput");
		long violations = violations(outbox);
		double p99 = median(outbox, "latencyP99ms");
		System.out.printf("  %s: relay >= 0.6 x producer: %.2f  %s%n", name, relayToProducer,
				(relayToProducer >= 0.6) ? "met" : String.format("MISSED by %.0f%%", (1 - relayToProducer / 0.6) * 100));
		if (outbox.get(0).containsKey("plainRelay")) {
			System.out.printf("  %s: (for scale) plain relay / producer: %.2f%n", name,
					medianOfRatios(outbox, "plainRelay", "producer"));
		}
		if (outbox.get(0).containsKey("plainRelay")) {
			everyRound(name + ": relay / plain relay", outbox, "throughput", "plainRelay", 0.9);
		}
		System.out.printf("  %s: two relays >= 1.3 x one: %.2f  %s%n", name, twoToOne,
				(twoToOne >= 1.3) ? "met" : String.format("MISSED by %.0f%%", (1 - twoToOne / 1.3) * 100));
		System.out.printf("  %s: order violations = 0: %d  %s%n", name, violations, (violations == 0) ? "met" : "MISSED");
		System.out.printf("  %s: p99 <= 25 ms: %.1f  %s%n", name, p99, (p99 <= 25) ? "met" : "MISSED");
	}

	private static long violations(List<Map<String, String>> outbox) {
		return outbox.stream().mapToLong((run) -> Long.parseLong(run.getOrDefault("orderViolations", "0"))).sum();
	}

	private static double medianOfRatios(List<Map<String, String>> runs, String numerator, String denominator) {
		List<Map<String, String>> ratios = new ArrayList<>();
		for (Map<String, String> run : runs) {
			ratios.add(Map.of("ratio", Double.toString(
					Double.parseDouble(run.get(numerator)) / Double.parseDouble(run.get(denominator)))));
		}
		return median(ratios, "ratio");
	}

	private static String ratio(Scenario scenario, Map<Scenario, Double> steady) {
		Scenario baseline = scenario.batch() ? Scenario.D : scenario.growingTable ? Scenario.G : Scenario.A;
		if (scenario == baseline || !steady.containsKey(baseline)) {
			return "baseline";
		}
		String ratio = String.format("%.2f × %s", steady.get(scenario) / steady.get(baseline), baseline.name());
		if ((scenario == Scenario.C_CACHE || scenario == Scenario.C_NO_CACHE) && steady.containsKey(Scenario.NOOP)) {
			ratio += String.format(", %.2f × NOOP", steady.get(scenario) / steady.get(Scenario.NOOP));
		}
		if (scenario == Scenario.B_CACHE && steady.containsKey(Scenario.B)) {
			ratio += String.format(", %.2f × B", steady.get(scenario) / steady.get(Scenario.B));
		}
		if (scenario == Scenario.E && steady.containsKey(Scenario.E_FLOOR)) {
			ratio += String.format(", %.2f × E_FLOOR", steady.get(scenario) / steady.get(Scenario.E_FLOOR));
		}
		if (scenario == Scenario.E && steady.containsKey(Scenario.B)) {
			ratio += String.format(", %.1f × B", steady.get(scenario) / steady.get(Scenario.B));
		}
		return ratio;
	}

	// rounds run the scenarios interleaved: the n-th result of each is from round n
	private static void perRound(Map<Scenario, List<Map<String, String>>> results, Scenario scenario,
			Scenario baseline) {
		if (!results.containsKey(scenario) || !results.containsKey(baseline)) {
			return;
		}
		List<Map<String, String>> runs = results.get(scenario);
		List<Map<String, String>> baselines = results.get(baseline);
		List<String> ratios = new ArrayList<>();
		for (int round = 0; round < Math.min(runs.size(), baselines.size()); round++) {
			ratios.add(String.format("%.2f", Double.parseDouble(runs.get(round).get("steady"))
					/ Double.parseDouble(baselines.get(round).get("steady"))));
		}
		System.out.printf("    %s / %s per round: %s%n", scenario.name(), baseline.name(), String.join(", ", ratios));
	}

	// a floor holds in every round, not only in the median one
	private static void everyRound(String label, List<Map<String, String>> runs, String numerator,
			String denominator, double target) {
		List<String> ratios = new ArrayList<>();
		List<String> missed = new ArrayList<>();
		for (int round = 0; round < runs.size(); round++) {
			double ratio = Double.parseDouble(runs.get(round).get(numerator))
					/ Double.parseDouble(runs.get(round).get(denominator));
			ratios.add(String.format("%.2f", ratio));
			if (ratio < target) {
				missed.add(Integer.toString(round + 1));
			}
		}
		System.out.printf("  %s >= %.1f in every round: %s  %s%n", label, target, String.join(", ", ratios),
				missed.isEmpty() ? "met" : "MISSED in round " + String.join(", ", missed));
	}

	private static void target(Map<Scenario, Double> steady, Scenario scenario, Scenario baseline, double target) {
		if (!steady.containsKey(scenario) || !steady.containsKey(baseline)) {
			return;
		}
		double ratio = steady.get(scenario) / steady.get(baseline);
		System.out.printf("  %s >= %.2f x %s: %.2f  %s%n", scenario.name(), target, baseline.name(), ratio,
				(ratio >= target) ? "met" : String.format("MISSED by %.0f%%", (1 - ratio / target) * 100));
	}

	private static double median(List<Map<String, String>> runs, String field) {
		// a run may lack a field: a cache scenario whose cache failed claimed some records
		double[] values = runs.stream()
			.filter((run) -> run.containsKey(field))
			.mapToDouble((run) -> Double.parseDouble(run.get(field)))
			.sorted()
			.toArray();
		if (values.length == 0) {
			return Double.NaN;
		}
		int middle = values.length / 2;
		return (values.length % 2 == 1) ? values[middle] : (values[middle - 1] + values[middle]) / 2;
	}

}
