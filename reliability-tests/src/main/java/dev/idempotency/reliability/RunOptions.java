package dev.idempotency.reliability;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The size of a run: how many transfers, how many of each fault, over how long.
 *
 * @param seed seeds the transfers, the duplicates and the fault schedule
 * @param events unique transfers sent
 * @param duplicateShare share of the transfers the producer sends a second time
 * @param accounts number of accounts
 * @param workers workload processes
 * @param kills SIGKILLs of workload processes (each restarted)
 * @param relayKills how many of the kills wait for a relay batch in flight
 * @param redisRestarts Redis stops and restarts
 * @param dbKills rounds of {@code pg_terminate_backend} of the workload's connections
 * @param dbOutages PostgreSQL stops longer than the error handler's retries
 * @param pgCrashes SIGKILLs of every PostgreSQL process, each followed by crash recovery
 * @param brokerRestarts Kafka broker stops and restarts
 * @param pauses SIGSTOP/SIGCONT of a workload process past its session timeout and lease
 * @param replays replays of a partition from an old offset
 * @param networkFaults faults between the workload and a server, through its proxy:
 * added latency, connections reset, a black hole and a half-open connection, in turn
 * @param longPgOutages PostgreSQL stops of 120-150 s, past the infrastructure retry's
 * longest interval
 * @param longRedisOutages Redis stops of 2-4 minutes
 * @param window the time over which the transfers are sent and the faults spread
 * @param drainTimeout how long to wait for the workload to drain after the window
 * @param control whether the workload runs the negative control (no {@code @Idempotent})
 * @param relay the outbox relay: {@link #TABLE_RELAY} or {@link #REPLICATION_RELAY}
 * @param brokers Kafka brokers: 1, or a cluster of 3 or more whose topics have three
 * replicas
 * @param brokerKills SIGKILLs of one broker of the cluster (each restarted)
 * @param workDirectory where the servers keep their data and the processes their logs
 * @param listeners the workload's listeners and handlers ({@code --modes}): {@link #TRANSACTIONAL}
 * always, {@link #LEASE}, {@link #BATCH} and {@link #HTTP} by default
 * @param httpRequestsSetting HTTP requests sent to the workload's handler
 * ({@code --http-requests}), or -1 for the default (see {@link #httpRequests()})
 */
record RunOptions(long seed, int events, double duplicateShare, int accounts, int workers, int kills, int relayKills,
		int redisRestarts, int dbKills, int dbOutages, int pgCrashes, int brokerRestarts, int pauses, int replays,
		int networkFaults, int longPgOutages, int longRedisOutages, Duration window, Duration drainTimeout, boolean control, String relay,
		int brokers, int brokerKills, Path workDirectory, Set<String> listeners, int httpRequestsSetting) {

	/** The outbox relay of the workload: the table relay (the default). */
	static final String TABLE_RELAY = "table";

	/** The outbox relay of the workload: the replication-stream relay. */
	static final String REPLICATION_RELAY = "replication";

	/** A listener of the workload: {@code @Idempotent} records on {@code transfers}. */
	static final String TRANSACTIONAL = "transactional";

	/** A listener of the workload: lease mode on {@code payments}, its effect outside the database. */
	static final String LEASE = "lease";

	/** A listener of the workload: {@code @Idempotent} batches on {@code transfers-batch}. */
	static final String BATCH = "batch";

	/**
	 * A handler of the workload: an {@code @Idempotent} Spring MVC handler, whose responses
	 * a proxy drops so that the client retries ({@link HttpTraffic}).
	 */
	static final String HTTP = "http";

	/** Every listener and handler, in the order the summary line names them. */
	static final List<String> LISTENERS = List.of(TRANSACTIONAL, LEASE, BATCH, HTTP);

	/** The fewest HTTP requests a run that has the handler sends by default. */
	private static final int MIN_HTTP_REQUESTS = 100;

	/** The size the build runs: a few minutes on two cores. */
	static RunOptions ci(long seed, Path workDirectory) {
		return new RunOptions(seed, 5_000, 0.1, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 0, 0, Duration.ofSeconds(60),
				Duration.ofMinutes(3), false, TABLE_RELAY, 1, 0, workDirectory, Set.copyOf(LISTENERS), -1);
	}

	/**
	 * The full size: at least 200,000 transfers, 50 kills, 5 Redis restarts, 5 backend
	 * kills, 3 PostgreSQL crashes, 50 network faults, a long PostgreSQL outage and a long
	 * Redis outage; three brokers and 20 broker kills.
	 */
	static RunOptions full(long seed, Path workDirectory) {
		return new RunOptions(seed, 200_000, 0.1, 100, 3, 50, 25, 5, 5, 2, 3, 2, 3, 3, 50, 1, 1, Duration.ofMinutes(15),
				Duration.ofMinutes(30), false, TABLE_RELAY, 3, 20, workDirectory, Set.copyOf(LISTENERS), -1);
	}

	/**
	 * Return whether the plan has an outage longer than the infrastructure retry's longest
	 * interval.
	 * @return whether long PostgreSQL or Redis outages are planned
	 */
	boolean longOutages() {
		return this.longPgOutages > 0 || this.longRedisOutages > 0;
	}

	/**
	 * Return what the workload runs, for the summary line.
	 * @return the modes, joined by {@code +}
	 */
	String modes() {
		StringBuilder modes = new StringBuilder();
		for (String listener : LISTENERS) {
			if (this.listeners.contains(listener)) {
				modes.append(listener).append(HTTP.equals(listener) ? "-handler+" : "-listener+");
			}
		}
		return modes + this.relay + "-relay";
	}

	/**
	 * Return whether the workload runs a listener.
	 * @param listener one of {@link #LISTENERS}
	 * @return whether {@code --modes} names it
	 */
	boolean runs(String listener) {
		return this.listeners.contains(listener);
	}

	/**
	 * Return how many payments the lease-mode listener gets: a fifth as many as the
	 * transfers, or none without it.
	 * @return the number of unique payments sent
	 */
	int payments() {
		return runs(LEASE) ? Math.max(1, this.events / 5) : 0;
	}

	/**
	 * Return how many HTTP requests the client sends to the workload's handler: a twentieth
	 * as many as the transfers, at least {@value #MIN_HTTP_REQUESTS}, unless
	 * {@code --http-requests} says otherwise; none without the handler.
	 * @return the number of unique HTTP requests sent
	 */
	int httpRequests() {
		if (!runs(HTTP)) {
			return 0;
		}
		return (this.httpRequestsSetting >= 0) ? this.httpRequestsSetting : Math.max(MIN_HTTP_REQUESTS, this.events / 20);
	}

	/**
	 * The negative control: one process, no faults but the HTTP responses dropped, and
	 * duplicates.
	 */
	static RunOptions control(long seed, Path workDirectory) {
		return new RunOptions(seed, 300, 0.2, 10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, Duration.ofSeconds(5),
				Duration.ofMinutes(2), true, TABLE_RELAY, 1, 0, workDirectory, Set.copyOf(LISTENERS), -1);
	}

	/**
	 * Parse {@code --size=ci|full|control} and overrides such as {@code --events=1000},
	 * {@code --seed=42}, {@code --window=10m}, {@code --control=true},
	 * {@code --relay=replication}, {@code --brokers=3}, {@code --broker-kills=4},
	 * {@code --modes=transactional,lease,batch,http}, {@code --http-requests=500}.
	 */
	static RunOptions parse(String[] args) {
		Map<String, String> values = new HashMap<>();
		for (String arg : args) {
			if (!arg.startsWith("--") || !arg.contains("=")) {
				throw new IllegalArgumentException("Expected --name=value, got " + arg);
			}
			values.put(arg.substring(2, arg.indexOf('=')), arg.substring(arg.indexOf('=') + 1));
		}
		long seed = values.containsKey("seed") ? Long.parseLong(values.remove("seed")) : System.nanoTime();
		Path work = Path.of(values.getOrDefault("work-dir", "target/reliability")).toAbsolutePath();
		values.remove("work-dir");
		String size = values.getOrDefault("size", "ci");
		values.remove("size");
		RunOptions base = switch (size) {
			case "ci" -> ci(seed, work);
			case "full" -> full(seed, work);
			case "control" -> control(seed, work);
			default -> throw new IllegalArgumentException("Unknown --size " + size + ": ci, full or control");
		};
		return base.with(values);
	}

	private RunOptions with(Map<String, String> values) {
		Map<String, String> remaining = new HashMap<>(values);
		RunOptions options = new RunOptions(this.seed, integer(remaining, "events", this.events),
				Double.parseDouble(remaining.getOrDefault("duplicate-share", Double.toString(this.duplicateShare))),
				integer(remaining, "accounts", this.accounts), integer(remaining, "workers", this.workers),
				integer(remaining, "kills", this.kills), integer(remaining, "relay-kills", this.relayKills),
				integer(remaining, "redis-restarts", this.redisRestarts), integer(remaining, "db-kills", this.dbKills),
				integer(remaining, "db-outages", this.dbOutages), integer(remaining, "pg-crashes", this.pgCrashes),
				integer(remaining, "broker-restarts", this.brokerRestarts), integer(remaining, "pauses", this.pauses),
				integer(remaining, "replays", this.replays),
				integer(remaining, "network-faults", this.networkFaults),
				integer(remaining, "long-pg-outages", this.longPgOutages),
				integer(remaining, "long-redis-outages", this.longRedisOutages), duration(remaining, "window", this.window),
				duration(remaining, "drain-timeout", this.drainTimeout),
				Boolean.parseBoolean(remaining.getOrDefault("control", Boolean.toString(this.control))),
				remaining.getOrDefault("relay", this.relay), integer(remaining, "brokers", this.brokers),
				integer(remaining, "broker-kills", this.brokerKills), this.workDirectory,
				remaining.containsKey("modes") ? Set.of(remaining.get("modes").split(",")) : this.listeners,
				integer(remaining, "http-requests", this.httpRequestsSetting));
		remaining.keySet()
			.removeAll(Set.of("events", "duplicate-share", "accounts", "workers", "kills", "relay-kills",
					"redis-restarts", "db-kills", "db-outages", "pg-crashes", "broker-restarts", "pauses", "replays",
					"network-faults", "long-pg-outages", "long-redis-outages", "window", "drain-timeout", "control",
					"relay", "brokers", "broker-kills", "modes", "http-requests"));
		if (!remaining.isEmpty()) {
			throw new IllegalArgumentException("Unknown options " + remaining.keySet());
		}
		if (options.relayKills > options.kills || options.workers < 1 || options.events < 1
				|| options.networkFaults < 0 || options.longPgOutages < 0 || options.longRedisOutages < 0
				|| options.httpRequestsSetting < -1) {
			throw new IllegalArgumentException("Inconsistent options " + options);
		}
		// a broker kill needs a cluster that survives it: 3 replicas, 2 of them in sync
		if (options.brokers < 1 || options.brokers == 2 || options.brokerKills < 0
				|| (options.brokerKills > 0 && options.brokers < 3)) {
			throw new IllegalArgumentException("--brokers takes 1 or 3 and more, --broker-kills needs 3 brokers: "
					+ options);
		}
		if (!options.relay.equals(TABLE_RELAY) && !options.relay.equals(REPLICATION_RELAY)) {
			throw new IllegalArgumentException("--relay takes " + TABLE_RELAY + " or " + REPLICATION_RELAY + ", not "
					+ options.relay);
		}
		if (!options.runs(TRANSACTIONAL) || !LISTENERS.containsAll(options.listeners)) {
			throw new IllegalArgumentException("--modes takes transactional and any of " + LEASE + ", " + BATCH
					+ ", " + HTTP + ", separated by commas, not " + options.listeners);
		}
		return options;
	}

	private static int integer(Map<String, String> values, String name, int fallback) {
		return values.containsKey(name) ? Integer.parseInt(values.get(name)) : fallback;
	}

	private static Duration duration(Map<String, String> values, String name, Duration fallback) {
		if (!values.containsKey(name)) {
			return fallback;
		}
		String value = values.get(name);
		long amount = Long.parseLong(value.substring(0, value.length() - 1));
		return switch (value.charAt(value.length() - 1)) {
			case 's' -> Duration.ofSeconds(amount);
			case 'm' -> Duration.ofMinutes(amount);
			case 'h' -> Duration.ofHours(amount);
			default -> throw new IllegalArgumentException(name + " takes a duration such as 90s, 20m: " + value);
		};
	}

}
