package dev.idempotency.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

/**
 * The faults of a run, drawn from the seed: what happens, when (from the start of the
 * window), to which process and for how long. The same seed gives the same plan.
 */
final class FaultPlan {

	enum Kind {

		/** SIGKILL a workload process at a random moment, restart it after {@code duration}. */
		KILL,

		/** SIGKILL a workload process while a relay batch is leased, restart it after {@code duration}. */
		KILL_MID_RELAY,

		/** Stop Redis for {@code duration}, then start it again (empty). */
		REDIS_RESTART,

		/** {@code pg_terminate_backend} every connection of the workload. */
		DB_KILL,

		/** Stop PostgreSQL for {@code duration}, then start it again on the same port. */
		DB_OUTAGE,

		/**
		 * SIGKILL every process of PostgreSQL, start it again on the same data after
		 * {@code duration}: crash recovery.
		 */
		PG_CRASH,

		/**
		 * Stop PostgreSQL for {@code duration} (at least {@link FaultPlan#LONG_PG_OUTAGE_MIN}),
		 * past the infrastructure retry's longest interval, then start it again. Workload
		 * process {@code target} (or the next running one) is killed and started again 10 s
		 * into the outage, so that it starts while PostgreSQL is down.
		 */
		LONG_PG_OUTAGE,

		/**
		 * Stop Redis for {@code duration} (at least {@link FaultPlan#LONG_REDIS_OUTAGE_MIN}),
		 * then start it again (empty).
		 */
		LONG_REDIS_OUTAGE,

		/**
		 * Stop every Kafka broker for {@code duration}, then start them again: with a
		 * cluster, a cluster without a quorum.
		 */
		BROKER_RESTART,

		/**
		 * SIGKILL one broker of a cluster, chosen by {@code target} (see
		 * {@link FaultPlan#BROKER_KILL_TARGETS}) and {@code fraction}, and start it again on
		 * the same data after {@code duration}.
		 */
		BROKER_KILL,

		/** SIGSTOP a workload process for {@code duration}, then SIGCONT. */
		PAUSE,

		/** Send again the records of partition {@code target} from an old offset. */
		REPLAY,

		/**
		 * Delay every chunk between the workload and server {@code target} by {@code delay},
		 * each way, for {@code duration}.
		 */
		LATENCY,

		/** Reset every connection between the workload and server {@code target} at once. */
		DROP_CONNECTIONS,

		/**
		 * Forward nothing between the workload and server {@code target}, either way, for
		 * {@code duration} (longer than the workload's timeouts); nothing is closed.
		 */
		BLACK_HOLE,

		/**
		 * Forward the workload's requests to server {@code target} but hold back its answers
		 * for {@code duration} (longer than the workload's timeouts).
		 */
		HALF_OPEN;

		boolean isNetworkFault() {
			return this == LATENCY || this == DROP_CONNECTIONS || this == BLACK_HOLE || this == HALF_OPEN;
		}

	}

	/**
	 * One fault.
	 * @param at when, from the start of the window
	 * @param kind what
	 * @param target the workload process (or partition, for a replay, or index in
	 * {@link #SERVERS}, for a network fault)
	 * @param duration how long the fault lasts
	 * @param fraction for a replay, where in the partition it starts (0 = the beginning);
	 * for a broker kill, which partition or broker (its share of their number)
	 * @param delay for added latency, the delay of each chunk each way
	 */
	record Fault(Duration at, Kind kind, int target, Duration duration, double fraction, Duration delay) {

		@Override
		public String toString() {
			String fault = String.format("%6.1fs %s target=%s duration=%.1fs", this.at.toMillis() / 1000.0, this.kind,
					this.kind.isNetworkFault() ? SERVERS.get(this.target)
							: (this.kind == Kind.BROKER_KILL) ? BROKER_KILL_TARGETS.get(this.target)
									: Integer.toString(this.target),
					this.duration.toMillis() / 1000.0);
			return (this.kind == Kind.LATENCY) ? fault + " delay=" + this.delay.toMillis() + "ms" : fault;
		}

	}

	static final int PARTITIONS = 6;

	/** Longer than the consumer's session timeout (6 s) and the relay's lease (10 s). */
	static final Duration PAUSE = Duration.ofSeconds(14);

	/**
	 * What a broker kill kills, as its target, in turn: the leader of a partition of
	 * {@code transfers}, the coordinator of the workload's consumer group, the leader of a
	 * partition of {@code transfer-events} (which the relay writes; the workload uses no
	 * Kafka transactions, hence no transaction coordinator), a broker drawn at random.
	 */
	static final List<String> BROKER_KILL_TARGETS = List.of("transfers-leader", "group-coordinator",
			"transfer-events-leader", "random-broker");

	/** The servers the workload reaches through a proxy, as a network fault's target. */
	static final List<String> SERVERS = List.of("postgres", "kafka", "redis");

	/**
	 * The shortest black hole or half-open connection: longer than every timeout of the
	 * workload's clients (see {@link Workload}).
	 */
	static final Duration BLACK_HOLE_MIN = Duration.ofSeconds(10);

	/**
	 * The shortest long PostgreSQL outage: four times the starter's default
	 * {@code idempotency.infrastructure-retry.max-interval} (30 s).
	 */
	static final Duration LONG_PG_OUTAGE_MIN = Duration.ofSeconds(120);

	/** The longest long PostgreSQL outage. */
	static final Duration LONG_PG_OUTAGE_MAX = Duration.ofSeconds(150);

	/** The shortest long Redis outage. */
	static final Duration LONG_REDIS_OUTAGE_MIN = Duration.ofMinutes(2);

	/** The longest long Redis outage. */
	static final Duration LONG_REDIS_OUTAGE_MAX = Duration.ofMinutes(4);

	private static final Kind[] NETWORK_FAULTS = { Kind.LATENCY, Kind.DROP_CONNECTIONS, Kind.BLACK_HOLE,
			Kind.HALF_OPEN };

	private final List<Fault> faults;

	FaultPlan(RunOptions options) {
		Random random = new Random(options.seed() ^ 0x5DEECE66DL);
		List<Fault> faults = new ArrayList<>();
		long window = options.window().toMillis();
		// leave the first tenth for the processes to start, the last tenth to settle
		long from = window / 10;
		long span = Math.max(1, window * 8 / 10);
		add(faults, random, options.kills() - options.relayKills(), Kind.KILL, from, span, options.workers(), 500, 3000);
		add(faults, random, options.relayKills(), Kind.KILL_MID_RELAY, from, span, options.workers(), 500, 3000);
		add(faults, random, options.redisRestarts(), Kind.REDIS_RESTART, from, span, 1, 1000, 5000);
		add(faults, random, options.dbKills(), Kind.DB_KILL, from, span, 1, 0, 0);
		// the error handler gives up after 3 retries of at most ~1.2 s each (connection
		// timeout 1 s, back-off 200 ms): an outage of 8-12 s outlasts them several times
		add(faults, random, options.dbOutages(), Kind.DB_OUTAGE, from, span, 1, 8000, 12000);
		add(faults, random, options.brokerRestarts(), Kind.BROKER_RESTART, from, span, 1, 2000, 6000);
		add(faults, random, options.pauses(), Kind.PAUSE, from, span, options.workers(), PAUSE.toMillis(),
				PAUSE.toMillis());
		for (int i = 0; i < options.replays(); i++) {
			faults.add(new Fault(Duration.ofMillis(from + (long) (random.nextDouble() * span)), Kind.REPLAY,
					random.nextInt(PARTITIONS), Duration.ZERO, random.nextDouble() * 0.5, Duration.ZERO));
		}
		// drawn last, so that a seed keeps the schedule it gave the other faults before
		add(faults, random, options.pgCrashes(), Kind.PG_CRASH, from, span, 1, 500, 3000);
		// the kinds in turn, so that a few faults have each; they start by 70% of the
		// window, while the transfers still flow, so that there is traffic to disturb
		long networkSpan = Math.max(1, window * 6 / 10);
		long blackHole = BLACK_HOLE_MIN.toMillis();
		for (int i = 0; i < options.networkFaults(); i++) {
			Kind kind = NETWORK_FAULTS[i % NETWORK_FAULTS.length];
			long at = from + (long) (random.nextDouble() * networkSpan);
			int server = random.nextInt(SERVERS.size());
			long duration = switch (kind) {
				case LATENCY -> 2000 + (long) (random.nextDouble() * 4000);
				case BLACK_HOLE, HALF_OPEN -> blackHole + (long) (random.nextDouble() * 4000);
				default -> 0;
			};
			long delay = (kind == Kind.LATENCY) ? 50 + (long) (random.nextDouble() * 200) : 0;
			faults.add(new Fault(Duration.ofMillis(at), kind, server, Duration.ofMillis(duration), 0,
					Duration.ofMillis(delay)));
		}
		// drawn after the network faults, for the same reason
		add(faults, random, options.longPgOutages(), Kind.LONG_PG_OUTAGE, from, span, 1,
				LONG_PG_OUTAGE_MIN.toMillis(), LONG_PG_OUTAGE_MAX.toMillis());
		add(faults, random, options.longRedisOutages(), Kind.LONG_REDIS_OUTAGE, from, span, 1,
				LONG_REDIS_OUTAGE_MIN.toMillis(), LONG_REDIS_OUTAGE_MAX.toMillis());
		// drawn last, for the same reason; the targets in turn
		for (int i = 0; i < options.brokerKills(); i++) {
			long at = from + (long) (random.nextDouble() * span);
			long duration = 2000 + (long) (random.nextDouble() * 4000);
			faults.add(new Fault(Duration.ofMillis(at), Kind.BROKER_KILL, i % BROKER_KILL_TARGETS.size(),
					Duration.ofMillis(duration), random.nextDouble(), Duration.ZERO));
		}
		faults.sort(Comparator.comparing(Fault::at));
		this.faults = List.copyOf(faults);
	}

	private static void add(List<Fault> faults, Random random, int count, Kind kind, long from, long span, int targets,
			long minDuration, long maxDuration) {
		for (int i = 0; i < count; i++) {
			long at = from + (long) (random.nextDouble() * span);
			long duration = minDuration + (long) (random.nextDouble() * (maxDuration - minDuration));
			faults.add(new Fault(Duration.ofMillis(at), kind, random.nextInt(targets), Duration.ofMillis(duration), 0,
					Duration.ZERO));
		}
	}

	List<Fault> faults() {
		return this.faults;
	}

}
