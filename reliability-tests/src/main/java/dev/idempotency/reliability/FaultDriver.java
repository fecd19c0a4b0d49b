package dev.idempotency.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Runs the workload as separate processes against a Kafka broker process, PostgreSQL and
 * Redis, each reached through a {@link NetworkProxy} of the driver's, injects the faults
 * of a seeded {@link FaultPlan} while the transfers are sent, waits for the run to drain
 * and hands it to the {@link Checker}. The network faults run on a thread of their own,
 * so that they overlap the others. With the HTTP handler, {@link HttpTraffic} sends its
 * requests over the same time as the transfers, each workload process reached through a
 * proxy of its own that drops a share of the responses.
 * <p>
 * {@code FaultDriver --size=ci|full|control [--seed=N] [--events=N] [--kills=N] ...}
 * prints the seed, the plan, the faults as they happen and one summary line, and exits
 * with 0 when the checker found nothing, 1 otherwise.
 */
public final class FaultDriver {

	/** How much longer a network fault lasts when it found no traffic to disturb. */
	private static final Duration NETWORK_FAULT_EXTENSION = Duration.ofSeconds(90);

	/**
	 * How long a kill or a pause of a workload process waits for an HTTP request in flight
	 * to it, when the HTTP handler runs, so that they land on requests mid-handler.
	 */
	private static final Duration HTTP_KILL_WAIT = Duration.ofSeconds(3);

	/** How long into a long PostgreSQL outage a workload process is restarted. */
	private static final Duration LONG_OUTAGE_RESTART = Duration.ofSeconds(10);

	private final RunOptions options;

	private final Path directory;

	private PostgresServer postgres;

	private RedisProcess redis;

	private KafkaCluster broker;

	// in the order of FaultPlan.SERVERS
	private final List<NetworkProxy> proxies = new ArrayList<>();

	// in front of each workload process's HTTP port, dropping a share of the responses
	private final List<NetworkProxy> httpProxies = new ArrayList<>();

	private Workload workload;

	private HttpTraffic http;

	// kills of a workload process with HTTP requests in flight to it, and those requests
	private long killsWithHttpInFlight;

	private long httpInFlightAtKills;

	private LedgerDatabase database;

	private final long started = System.nanoTime();

	private long kills;

	private long midRelayKills;

	private long redisRestarts;

	private long dbKills;

	private long backendsTerminated;

	private long dbOutages;

	private long pgCrashes;

	private long pgDownNanos;

	private long longPgOutages;

	private long longRedisOutages;

	private long redisDownNanos;

	// workload processes that exited by themselves while PostgreSQL was down
	private long exitsWhilePgDown;

	private volatile boolean pgDown;

	private final List<String> crashLosses = new ArrayList<>();

	private long brokerRestarts;

	private long brokerKills;

	private long pauses;

	private long replayed;

	private long exits;

	private long networkFaults;

	private long networkFaultsWithoutEffect;

	FaultDriver(RunOptions options) {
		this.options = options;
		this.directory = options.workDirectory()
			.resolve((options.control() ? "control-" : "run-") + Long.toUnsignedString(options.seed()));
	}

	public static void main(String[] args) throws Exception {
		RunOptions options = RunOptions.parse(args);
		Checker.Verdict verdict = new FaultDriver(options).run();
		System.exit(verdict.passed() ? 0 : 1);
	}

	Checker.Verdict run() throws Exception {
		log("seed=" + this.options.seed() + " " + this.options);
		if (!postgresSettings(this.options).isEmpty()) {
			log("postgres settings " + postgresSettings(this.options));
		}
		FaultPlan plan = new FaultPlan(this.options);
		plan.faults().forEach((fault) -> log("plan " + fault));
		deleteRecursively(this.directory);
		Files.createDirectories(this.directory);
		Thread cleanup = new Thread(this::stopEverything);
		Runtime.getRuntime().addShutdownHook(cleanup);
		try {
			this.postgres = new PostgresServer(this.directory.resolve("postgres"), postgresSettings(this.options));
			this.postgres.start();
			this.database = new LedgerDatabase(this.postgres.jdbcUrl());
			NetworkProxy postgresProxy = proxy("postgres").start(this.postgres.port());
			this.redis = new RedisProcess();
			this.redis.start();
			NetworkProxy kafkaProxy = proxy("kafka");
			NetworkProxy redisProxy = proxy("redis").start(this.redis.port());
			// one proxy per broker, the first in the place of FaultPlan.SERVERS, the others after
			List<NetworkProxy> kafkaProxies = new ArrayList<>(List.of(kafkaProxy));
			for (int id = 2; id <= this.options.brokers(); id++) {
				kafkaProxies.add(proxy("kafka-" + id));
			}
			// the workload's listener is advertised at the proxy: the clients reconnect there
			this.broker = new KafkaCluster(this.directory.resolve("kafka"),
					kafkaProxies.stream().map(NetworkProxy::port).toList());
			for (int i = 0; i < kafkaProxies.size(); i++) {
				kafkaProxies.get(i).start(this.broker.brokers().get(i).workloadPort());
			}
			this.broker.start();
			this.broker.createTopics(Map.of(TransferListeners.TOPIC, FaultPlan.PARTITIONS, Ledger.EVENTS_TOPIC,
					FaultPlan.PARTITIONS, Checker.DEAD_LETTER_TOPIC, FaultPlan.PARTITIONS));
			Map<String, Integer> modeTopics = new HashMap<>();
			for (String topic : Checker.modeTopics(this.options)) {
				modeTopics.put(topic, FaultPlan.PARTITIONS);
				modeTopics.put(topic + Checker.DEAD_LETTER_SUFFIX, FaultPlan.PARTITIONS);
			}
			if (!modeTopics.isEmpty()) {
				this.broker.createTopics(modeTopics);
			}
			log("servers up: postgres " + this.postgres.jdbcUrl() + ", redis " + this.redis.url() + ", kafka "
					+ this.broker.bootstrapServers());
			try (TransferProducer producer = new TransferProducer(this.options, this.broker.bootstrapServers())) {
				this.database.createSchema(producer.transfers(), this.options.accounts());
				this.database.createPayments(producer.payments());
				this.workload = new Workload(this.options,
						"jdbc:postgresql://127.0.0.1:" + postgresProxy.port() + "/postgres",
						kafkaProxies.stream()
							.map((proxy) -> "127.0.0.1:" + proxy.port())
							.collect(Collectors.joining(",")),
						"redis://127.0.0.1:" + redisProxy.port(), this.directory);
				List<Integer> httpPorts = this.workload.httpPorts();
				for (int i = 0; i < httpPorts.size(); i++) {
					NetworkProxy httpProxy = new NetworkProxy("http-" + i).start(httpPorts.get(i))
						.dropAnswers(HttpTraffic.DROP_SHARE, this.options.seed() + i);
					this.httpProxies.add(httpProxy);
				}
				this.http = new HttpTraffic(this.options,
						this.httpProxies.stream().map(NetworkProxy::port).toList(), this::log);
				this.database.createHttpRequests(this.http.requests());
				this.workload.startAll();
				this.database.observeRelayOwners();
				long windowStart = System.nanoTime();
				Map<String, List<Integer>> proxyPorts = Map.of("postgres", List.of(postgresProxy.port()), "kafka",
						kafkaProxies.stream().map(NetworkProxy::port).toList(), "redis", List.of(redisProxy.port()));
				// the soak's first reading, once the workload is warm (a tenth into the window)
				ScheduledExecutorService vitals = new ScheduledThreadPoolExecutor(1);
				ScheduledFuture<Vitals.Sample> firstVitals = vitals.schedule(() -> {
					Vitals.Sample sample = Vitals.sample("start", this.workload.processes(), proxyPorts,
							this.postgres.jdbcUrl());
					sample.lines().forEach(this::log);
					return sample;
				}, this.options.window().toMillis() / 10, TimeUnit.MILLISECONDS);
				Thread sender = new Thread(() -> {
					try {
						producer.sendAll(this.options.window().multipliedBy(8).dividedBy(10));
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
					}
				}, "transfer-producer");
				sender.start();
				// the HTTP requests over the same time as the transfers, so that faults meet them
				this.http.start(this.options.window().multipliedBy(8).dividedBy(10));
				ScheduledExecutorService restarts = new ScheduledThreadPoolExecutor(1);
				// as an orchestrator would: a process that exits by itself (one that starts
				// while PostgreSQL is down fails its start-up) is started again
				ScheduledExecutorService supervisor = new ScheduledThreadPoolExecutor(1);
				supervisor.scheduleWithFixedDelay(this::restartExited, 2, 2, TimeUnit.SECONDS);
				// one after the other, each at its moment or when the one before ended
				ScheduledExecutorService network = new ScheduledThreadPoolExecutor(1);
				for (FaultPlan.Fault fault : plan.faults()) {
					if (fault.kind().isNetworkFault()) {
						network.schedule(() -> injectNetworkFault(fault),
								windowStart + fault.at().toNanos() - System.nanoTime(), TimeUnit.NANOSECONDS);
					}
				}
				for (FaultPlan.Fault fault : plan.faults()) {
					if (fault.kind().isNetworkFault()) {
						continue;
					}
					long wait = windowStart + fault.at().toNanos() - System.nanoTime();
					if (wait > 0) {
						TimeUnit.NANOSECONDS.sleep(wait);
					}
					inject(fault, producer, restarts);
				}
				sender.join();
				log("sent " + producer.transfers().size() + " transfers, " + producer.payments().size()
						+ " payments and " + producer.duplicatesInjected() + " duplicates");
				restarts.shutdown();
				restarts.awaitTermination(1, TimeUnit.MINUTES);
				network.shutdown();
				network.awaitTermination(10, TimeUnit.MINUTES);
				this.proxies.forEach(NetworkProxy::heal);
				this.workload.restoreAll();
				HttpTraffic.Totals httpTotals = this.http.await();
				if (httpTotals.requests() > 0) {
					log("HTTP requests: " + httpTotals + ", dropped responses " + droppedResponses() + ", kills with "
							+ "requests in flight to the process " + this.killsWithHttpInFlight + " (requests "
							+ this.httpInFlightAtKills + ")");
				}
				drain();
				supervisor.shutdownNow();
				supervisor.awaitTermination(1, TimeUnit.MINUTES);
				log(String.format(
						"faults: kills=%d (mid-relay-batch=%d) redis_restarts=%d long_redis_outages=%d db_kills=%d (backends=%d) db_outages=%d long_pg_outages=%d pg_crashes=%d broker_restarts=%d broker_kills=%d pauses=%d replayed=%d network_faults=%d (without effect=%d) exited_by_themselves=%d (while postgres was down=%d)",
						this.kills, this.midRelayKills, this.redisRestarts, this.longRedisOutages, this.dbKills,
						this.backendsTerminated, this.dbOutages, this.longPgOutages, this.pgCrashes,
						this.brokerRestarts, this.brokerKills, this.pauses, this.replayed, this.networkFaults,
						this.networkFaultsWithoutEffect, this.exits, this.exitsWhilePgDown));
				this.proxies.forEach((proxy) -> log("proxy " + proxy.name() + ": " + proxy.stats()));
				this.httpProxies.forEach((proxy) -> log("proxy " + proxy.name() + ": " + proxy.stats()));
				Vitals.Sample lastVitals = Vitals.sample("end", this.workload.processes(), proxyPorts,
						this.postgres.jdbcUrl());
				lastVitals.lines().forEach(this::log);
				try {
					Vitals.compare(firstVitals.get(), lastVitals).forEach(this::log);
				}
				catch (ExecutionException ex) {
					log("vitals: the first reading failed: " + ex.getCause());
				}
				vitals.shutdown();
				this.workload.stopAll();
				Checker.Verdict verdict = new Checker(this.postgres.jdbcUrl(), this.broker.bootstrapServers(),
						Checker.modeTopics(this.options))
					.check(new Checker.Faults(producer.duplicatesInjected(), this.kills, this.redisRestarts,
							this.dbKills, this.networkFaults, this.pgCrashes, this.pgDownNanos / 1e9,
							this.redisDownNanos / 1e9, this.options.modes(), this.brokerKills, httpTotals,
							droppedResponses()),
							this.crashLosses);
				verdict.violations().forEach((violation) -> log("VIOLATION " + violation));
				log(String.format("duration %.0f s", (System.nanoTime() - this.started) / 1e9));
				System.out.println(verdict.summary());
				return verdict;
			}
		}
		finally {
			stopEverything();
			Runtime.getRuntime().removeShutdownHook(cleanup);
		}
	}

	private void inject(FaultPlan.Fault fault, TransferProducer producer, ScheduledExecutorService restarts)
			throws Exception {
		switch (fault.kind()) {
			case KILL, KILL_MID_RELAY -> kill(fault, restarts);
			case REDIS_RESTART -> {
				log("redis stop for " + fault.duration().toMillis() + " ms");
				stopRedisFor(fault.duration());
				this.redisRestarts++;
				log("redis started");
			}
			case LONG_REDIS_OUTAGE -> {
				log("long redis outage: stop for " + fault.duration().toMillis() + " ms");
				stopRedisFor(fault.duration());
				this.longRedisOutages++;
				log("redis started after the long outage");
			}
			case DB_KILL -> {
				int terminated = this.database.terminateBackends();
				this.dbKills++;
				this.backendsTerminated += terminated;
				log("pg_terminate_backend: " + terminated + " connections of the workload");
			}
			case DB_OUTAGE -> {
				log("postgres stop for " + fault.duration().toMillis() + " ms");
				stopPostgresFor(fault.duration());
				this.dbOutages++;
				log("postgres started");
			}
			case LONG_PG_OUTAGE -> {
				log("long postgres outage: stop for " + fault.duration().toMillis() + " ms");
				long exitsBefore = exits();
				long down = System.nanoTime();
				this.pgDown = true;
				try {
					this.postgres.stop();
					Thread.sleep(LONG_OUTAGE_RESTART.toMillis());
					restartWhilePostgresIsDown(fault);
					Thread.sleep(Math.max(0, fault.duration().toMillis() - LONG_OUTAGE_RESTART.toMillis()));
					this.postgres.start();
				}
				finally {
					this.pgDown = false;
					this.pgDownNanos += System.nanoTime() - down;
				}
				this.longPgOutages++;
				log("postgres started after the long outage; workload processes exited by themselves meanwhile: "
						+ (exits() - exitsBefore) + ", each started again");
			}
			case PG_CRASH -> crashPostgres(fault);
			case BROKER_RESTART -> {
				// a cluster's brokers all stop: no quorum, no leader, until they are back
				log("kafka stop (" + this.broker.size() + " brokers) for " + fault.duration().toMillis() + " ms");
				this.broker.stop();
				Thread.sleep(fault.duration().toMillis());
				this.broker.start();
				this.brokerRestarts++;
				log("kafka started");
			}
			case BROKER_KILL -> {
				if (new BrokerKill(this.broker, this::log).inject(fault)) {
					this.brokerKills++;
				}
			}
			case PAUSE -> {
				JavaProcess process = running(fault.target());
				if (process != null) {
					int httpInFlight = awaitHttpInFlight(process);
					process.pause();
					log("SIGSTOP " + process + " for " + fault.duration().toMillis() + " ms"
							+ ((httpInFlight > 0) ? ", " + httpInFlight + " HTTP requests in flight to it" : ""));
					Thread.sleep(fault.duration().toMillis());
					process.resume();
					this.pauses++;
					log("SIGCONT " + process);
				}
			}
			case REPLAY -> {
				int count = producer.replay(fault.target(), fault.fraction(),
						Math.max(50, this.options.events() / 100));
				this.replayed += count;
				log("replayed " + count + " records of partition " + fault.target() + " from "
						+ Math.round(fault.fraction() * 100) + "% of it");
			}
		}
	}

	/**
	 * Inject a network fault through the target's proxy and count it if it took effect:
	 * chunks delayed, connections reset, or bytes or connections held back. A fault that
	 * found nothing to disturb by its end (its server was down, say) lasts until it does,
	 * up to {@link #NETWORK_FAULT_EXTENSION} more.
	 */
	private void injectNetworkFault(FaultPlan.Fault fault) {
		NetworkProxy proxy = networkFaultProxy(fault);
		NetworkProxy.Stats before = proxy.stats();
		String what = fault.kind() + " " + proxy.name();
		long extended = 0;
		try {
			switch (fault.kind()) {
				case LATENCY -> {
					log(what + ": " + fault.delay().toMillis() + " ms each way for " + fault.duration().toMillis()
							+ " ms");
					proxy.addLatency(fault.delay());
				}
				case DROP_CONNECTIONS -> proxy.dropConnections();
				case BLACK_HOLE -> {
					log(what + " for " + fault.duration().toMillis() + " ms");
					proxy.blackHole();
				}
				case HALF_OPEN -> {
					log(what + ": answers held back for " + fault.duration().toMillis() + " ms");
					proxy.holdAnswers();
				}
				default -> throw new IllegalArgumentException("Not a network fault: " + fault);
			}
			Thread.sleep(fault.duration().toMillis());
			long end = System.nanoTime();
			while (effect(fault.kind(), before, proxy.stats()) == 0
					&& System.nanoTime() - end < NETWORK_FAULT_EXTENSION.toNanos()) {
				Thread.sleep(100);
				if (fault.kind() == FaultPlan.Kind.DROP_CONNECTIONS) {
					proxy.dropConnections();
				}
			}
			extended = (System.nanoTime() - end) / 1_000_000;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		finally {
			proxy.heal();
		}
		NetworkProxy.Stats after = proxy.stats();
		long effect = effect(fault.kind(), before, after);
		String evidence = switch (fault.kind()) {
			case LATENCY -> effect + " chunks delayed";
			case DROP_CONNECTIONS -> effect + " connections reset";
			default -> (after.heldBytes() - before.heldBytes()) + " bytes and "
					+ (after.heldConnections() - before.heldConnections()) + " new connections held back, "
					+ (after.abandoned() - before.abandoned()) + " connections closed by the workload meanwhile";
		};
		synchronized (this) {
			if (effect > 0) {
				this.networkFaults++;
			}
			else {
				this.networkFaultsWithoutEffect++;
			}
		}
		String waited = (extended >= 100) ? ", after " + extended + " ms more waiting for traffic" : "";
		log(what + " healed: " + evidence + waited + ((effect > 0) ? "" : ", no effect: not counted"));
	}

	private long droppedResponses() {
		return this.httpProxies.stream().mapToLong((proxy) -> proxy.stats().droppedAnswers()).sum();
	}

	private static long effect(FaultPlan.Kind kind, NetworkProxy.Stats before, NetworkProxy.Stats after) {
		return switch (kind) {
			case LATENCY -> after.delayedChunks() - before.delayedChunks();
			case DROP_CONNECTIONS -> after.reset() - before.reset();
			default -> after.heldBytes() - before.heldBytes() + after.heldConnections() - before.heldConnections();
		};
	}

	// a fault against Kafka disturbs one broker's proxy, drawn from the fault's moment
	private NetworkProxy networkFaultProxy(FaultPlan.Fault fault) {
		int broker = (int) (fault.at().toMillis() % this.broker.size());
		if (!"kafka".equals(FaultPlan.SERVERS.get(fault.target())) || broker == 0) {
			return this.proxies.get(fault.target());
		}
		return this.proxies.get(FaultPlan.SERVERS.size() + broker - 1);
	}

	private NetworkProxy proxy(String name) {
		NetworkProxy proxy = new NetworkProxy(name);
		this.proxies.add(proxy);
		return proxy;
	}

	private void kill(FaultPlan.Fault fault, ScheduledExecutorService restarts) throws Exception {
		JavaProcess process = null;
		List<String> owners = List.of();
		if (fault.kind() == FaultPlan.Kind.KILL_MID_RELAY) {
			// wait for a relay with a batch in flight, and kill the process it runs in
			long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
			while (process == null && System.nanoTime() < deadline) {
				Map<String, List<String>> leased = this.database.leasesByWorker();
				for (JavaProcess candidate : this.workload.processes()) {
					if (leased.containsKey(candidate.name()) && candidate.isAlive() && !candidate.isPaused()) {
						process = candidate;
						owners = leased.get(candidate.name());
						break;
					}
				}
			}
		}
		if (process == null) {
			process = running(fault.target());
		}
		if (process == null) {
			log("no running workload process to kill");
			return;
		}
		int httpInFlight = (fault.kind() == FaultPlan.Kind.KILL) ? awaitHttpInFlight(process)
				: this.http.inFlight(this.workload.processes().indexOf(process));
		process.kill();
		this.kills++;
		if (httpInFlight > 0) {
			this.killsWithHttpInFlight++;
			this.httpInFlightAtKills += httpInFlight;
		}
		String http = (httpInFlight > 0) ? ", " + httpInFlight + " HTTP requests in flight to it" : "";
		JavaProcess killed = process;
		restarts.schedule(() -> {
			killed.start();
			log("started " + killed);
		}, fault.duration().toMillis(), TimeUnit.MILLISECONDS);
		if (owners.isEmpty()) {
			log("SIGKILL " + process + http + ", restart in " + fault.duration().toMillis() + " ms");
			return;
		}
		// a batch whose relay died stays leased until the lease expires
		long left = this.database.leasedRows(owners);
		if (left > 0) {
			this.midRelayKills++;
		}
		log("SIGKILL " + process + " with " + left + " outbox events held by its relay's claims" + http
				+ ", restart in " + fault.duration().toMillis() + " ms");
	}

	/**
	 * Wait until an HTTP request is in flight to a workload process, likely in its
	 * handler's transaction, at most {@link #HTTP_KILL_WAIT}, when the HTTP handler runs.
	 * @return the requests in flight to it now
	 */
	private int awaitHttpInFlight(JavaProcess process) throws InterruptedException {
		int index = this.workload.processes().indexOf(process);
		if (this.options.runs(RunOptions.HTTP)) {
			long deadline = System.nanoTime() + HTTP_KILL_WAIT.toNanos();
			while (this.http.inFlight(index) == 0 && System.nanoTime() < deadline) {
				Thread.sleep(1);
			}
		}
		return this.http.inFlight(index);
	}

	/**
	 * SIGKILL a workload process and start it again at once while PostgreSQL is down: its
	 * start-up fails, and it must be started again until PostgreSQL is back.
	 */
	private void restartWhilePostgresIsDown(FaultPlan.Fault fault) {
		JavaProcess process = running(fault.target());
		if (process == null) {
			return;
		}
		process.kill();
		this.kills++;
		process.start();
		log("SIGKILL " + process + " and started it again while postgres is down");
	}

	private void stopPostgresFor(Duration duration) throws Exception {
		long down = System.nanoTime();
		this.pgDown = true;
		try {
			this.postgres.stop();
			Thread.sleep(duration.toMillis());
			this.postgres.start();
		}
		finally {
			this.pgDown = false;
			this.pgDownNanos += System.nanoTime() - down;
		}
	}

	private void stopRedisFor(Duration duration) throws Exception {
		long down = System.nanoTime();
		try {
			this.redis.stop();
			Thread.sleep(duration.toMillis());
			this.redis.start();
		}
		finally {
			this.redisDownNanos += System.nanoTime() - down;
		}
	}

	private synchronized long exits() {
		return this.exits;
	}

	private void crashPostgres(FaultPlan.Fault fault) throws Exception {
		CrashWitness witness = new CrashWitness(this.postgres.jdbcUrl(), (int) this.pgCrashes + 1);
		witness.commitBeforeCrash();
		long down = System.nanoTime();
		this.pgDown = true;
		PostgresServer.Crash crash = this.postgres.crash();
		log("SIGKILL postgres: postmaster " + crash.postmasterPid() + " and its " + (crash.processes() - 1)
				+ " processes, after " + witness.effectsBeforeCrash() + " committed effects; start in "
				+ fault.duration().toMillis() + " ms");
		Thread.sleep(fault.duration().toMillis());
		this.postgres.startAfterCrash();
		this.pgDown = false;
		this.pgDownNanos += System.nanoTime() - down;
		this.pgCrashes++;
		long postmaster = this.postgres.postmasterPid();
		// the fault must have happened: a new postmaster, and a start that ran crash recovery
		if (postmaster == crash.postmasterPid()) {
			this.crashLosses.add("PostgreSQL crash " + this.pgCrashes + " did not replace the postmaster");
		}
		if (!this.postgres.awaitRecoveries((int) this.pgCrashes, Duration.ofSeconds(30))) {
			this.crashLosses.add("PostgreSQL crash " + this.pgCrashes + " was not followed by crash recovery; see "
					+ this.postgres.log());
		}
		// "redo starts at", "redo done at" or "redo is not required"
		List<String> redo = this.postgres.logLines("LOG:  redo ");
		log("postgres started after the crash: postmaster " + postmaster + ", "
				+ (redo.isEmpty() ? "no redo logged" : redo.get(redo.size() - 1).replaceFirst("^.*LOG:\\s+", "")));
		List<String> lost = witness.lostAfterRecovery();
		lost.forEach((loss) -> log("lost in the crash: " + loss));
		this.crashLosses.addAll(lost);
	}

	private void restartExited() {
		for (JavaProcess process : this.workload.processes()) {
			if (process.hasExited()) {
				boolean pgDown = this.pgDown;
				synchronized (this) {
					this.exits++;
					if (pgDown) {
						this.exitsWhilePgDown++;
					}
				}
				log(process + " exited by itself" + (pgDown ? " while postgres is down" : "")
						+ "; starting it again");
				try {
					process.start();
				}
				catch (RuntimeException ex) {
					// an exception would end the supervisor's schedule: try again next round
					log("could not start " + process + ": " + ex);
				}
			}
		}
	}

	// the target if it runs, else the next one that does
	private JavaProcess running(int target) {
		List<JavaProcess> processes = this.workload.processes();
		for (int i = 0; i < processes.size(); i++) {
			JavaProcess process = processes.get((target + i) % processes.size());
			if (process.isAlive() && !process.isPaused()) {
				return process;
			}
		}
		return null;
	}

	private void drain() throws Exception {
		long deadline = System.nanoTime() + this.options.drainTimeout().toNanos();
		int quiet = 0;
		try (Admin admin = this.broker.admin()) {
			long lastLog = 0;
			while (System.nanoTime() < deadline) {
				long lag = lag(admin);
				long outbox = this.database.outboxRows();
				if (System.nanoTime() - lastLog > 10_000_000_000L) {
					log("draining: lag=" + lag + " outbox=" + outbox);
					lastLog = System.nanoTime();
				}
				quiet = (lag == 0 && outbox == 0) ? quiet + 1 : 0;
				if (quiet == 2) {
					log("drained: lag=0 outbox=0");
					return;
				}
				Thread.sleep(1000);
			}
		}
		log("not drained after " + this.options.drainTimeout());
	}

	private long lag(Admin admin) throws Exception {
		long lag = lag(admin, TransferListeners.GROUP, TransferListeners.TOPIC);
		if (this.options.runs(RunOptions.BATCH)) {
			lag += lag(admin, TransferListeners.BATCH_GROUP, TransferListeners.BATCH_TOPIC);
		}
		if (this.options.runs(RunOptions.LEASE)) {
			lag += lag(admin, PaymentListeners.GROUP, PaymentListeners.TOPIC);
		}
		return lag;
	}

	private long lag(Admin admin, String group, String topic) throws Exception {
		Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
			.partitionsToOffsetAndMetadata()
			.get(30, TimeUnit.SECONDS);
		Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
		for (int partition = 0; partition < FaultPlan.PARTITIONS; partition++) {
			latest.put(new TopicPartition(topic, partition), OffsetSpec.latest());
		}
		Map<TopicPartition, ListOffsetsResultInfo> ends = admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
		long lag = 0;
		for (Map.Entry<TopicPartition, ListOffsetsResultInfo> end : ends.entrySet()) {
			OffsetAndMetadata offset = committed.get(end.getKey());
			lag += end.getValue().offset() - ((offset != null) ? offset.offset() : 0);
		}
		return lag;
	}

	private synchronized void stopEverything() {
		if (this.workload != null) {
			this.workload.processes().forEach(JavaProcess::kill);
		}
		this.proxies.forEach(NetworkProxy::close);
		this.httpProxies.forEach(NetworkProxy::close);
		try {
			if (this.broker != null) {
				this.broker.stop();
			}
			if (this.redis != null) {
				this.redis.stop();
			}
			if (this.postgres != null) {
				this.postgres.stop();
			}
		}
		catch (IOException | RuntimeException ex) {
			log("could not stop a server: " + ex);
		}
	}

	// settings over the durable defaults, e.g. synchronous_commit=off for a negative control
	private static Map<String, String> postgresSettings(RunOptions options) {
		String settings = System.getenv("RELIABILITY_POSTGRES_SETTINGS");
		Map<String, String> result = new HashMap<>();
		if (RunOptions.REPLICATION_RELAY.equals(options.relay())) {
			// logical decoding; a replication connection cut off by the network gives up
			// its slot within 10 s, so that another instance takes it over
			result.put("wal_level", "logical");
			result.put("wal_sender_timeout", "10s");
		}
		if (settings != null && !settings.isBlank()) {
			for (String setting : settings.trim().split("\\s+")) {
				int equals = setting.indexOf('=');
				if (equals < 1) {
					throw new IllegalArgumentException(
							"RELIABILITY_POSTGRES_SETTINGS takes name=value pairs: " + setting);
				}
				result.put(setting.substring(0, equals), setting.substring(equals + 1));
			}
		}
		return result;
	}

	private void log(String message) {
		System.out.printf("[%7.1fs] %s%n", (System.nanoTime() - this.started) / 1e9, message);
		System.out.flush();
	}

	private static void deleteRecursively(Path path) throws IOException {
		if (!Files.exists(path)) {
			return;
		}
		try (var paths = Files.walk(path)) {
			for (Path each : paths.sorted(Comparator.reverseOrder()).toList()) {
				Files.delete(each);
			}
		}
	}

}
