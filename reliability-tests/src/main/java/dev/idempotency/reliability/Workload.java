package dev.idempotency.reliability;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The workload processes: {@link TransferApplication} JVMs of one consumer group,
 * each with its own relay, started with the addresses of the servers (the driver's
 * {@link NetworkProxy proxies} in front of them).
 * <p>
 * Their network timeouts are an application's in production, each shorter than a black
 * hole ({@link FaultPlan#BLACK_HOLE_MIN}): 8 s for a statement's answer
 * ({@code socketTimeout}, longer than the claim's 5 s lock timeout) and a Kafka request,
 * 6 s for the consumer's session, 4 s for the relay's sends, 500 ms for Redis.
 * <p>
 * With the HTTP handler, each process serves HTTP on a port of its own, the same across
 * its restarts ({@link #httpPorts()}).
 * <p>
 * The infrastructure retry waits at most 5 s between attempts, so that the workload
 * catches up soon after a short outage; a run with long outages keeps the starter's
 * default (30 s), so that an outage of two minutes and more finds the retry at its longest
 * interval, as it would in production.
 */
final class Workload {

	private final List<JavaProcess> processes = new ArrayList<>();

	private final List<Integer> httpPorts = new ArrayList<>();

	Workload(RunOptions options, String jdbcUrl, String bootstrapServers, String redisUrl, Path logs) {
		for (int i = 0; i < options.workers(); i++) {
			String name = "worker-" + i;
			if (options.runs(RunOptions.HTTP)) {
				this.httpPorts.add(Ports.free());
			}
			List<String> arguments = new ArrayList<>(List.of("--spring.main.banner-mode=off", "--logging.level.root=WARN",
					"--spring.datasource.url=" + jdbcUrl, "--spring.datasource.username=postgres",
					"--spring.datasource.password=postgres", "--spring.datasource.hikari.maximum-pool-size=5",
					"--spring.datasource.hikari.connection-timeout=1000",
					"--spring.datasource.hikari.data-source-properties.ApplicationName=" + name,
					"--spring.datasource.hikari.data-source-properties.socketTimeout=8",
					"--spring.kafka.bootstrap-servers=" + bootstrapServers,
					"--spring.kafka.consumer.auto-offset-reset=earliest", "--spring.kafka.consumer.max-poll-records=100",
					"--spring.kafka.consumer.properties.session.timeout.ms=6000",
					"--spring.kafka.consumer.properties.heartbeat.interval.ms=1500",
					"--spring.kafka.properties.request.timeout.ms=8000",
					"--spring.kafka.listener.concurrency=2", "--spring.data.redis.url=" + redisUrl,
					"--spring.data.redis.timeout=500ms", "--idempotency.outbox.lease=10s",
					"--idempotency.outbox.send-timeout=4s", "--idempotency.outbox.poll-interval=200ms",
					"--idempotency.outbox.max-backoff=5s",
					// a broker outage must delay events, not kill them
					"--idempotency.outbox.max-attempts=1000", "--workload.idempotent=" + !options.control(),
					"--workload.worker=" + name, "--workload.lease=" + options.runs(RunOptions.LEASE),
					"--workload.batch=" + options.runs(RunOptions.BATCH)));
			if (options.runs(RunOptions.HTTP)) {
				arguments.addAll(List.of("--workload.http=true", "--server.port=" + this.httpPorts.get(i),
						"--server.address=127.0.0.1"));
			}
			if (!options.longOutages()) {
				// the short outages end sooner than a 30 s wait would
				arguments.add("--idempotency.infrastructure-retry.max-interval=5s");
			}
			if (RunOptions.REPLICATION_RELAY.equals(options.relay())) {
				arguments.addAll(List.of("--idempotency.outbox.replication.enabled=true",
						"--idempotency.outbox.replication.standby-retry-interval=500ms"));
			}
			// more application properties for every workload process, e.g. a relay setting to try
			String extra = System.getenv("RELIABILITY_WORKLOAD_ARGS");
			if (extra != null && !extra.isBlank()) {
				arguments.addAll(List.of(extra.trim().split("\\s+")));
			}
			this.processes.add(new JavaProcess(name,
					List.of("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k"),
					TransferApplication.class.getName(), arguments, logs.resolve(name + ".log")));
		}
	}

	List<JavaProcess> processes() {
		return this.processes;
	}

	/**
	 * Return the HTTP port of each process, in the order of {@link #processes()}.
	 * @return the ports, empty without the HTTP handler
	 */
	List<Integer> httpPorts() {
		return this.httpPorts;
	}

	void startAll() {
		this.processes.forEach(JavaProcess::start);
	}

	/** Resume what is paused and start what is not running. */
	void restoreAll() {
		for (JavaProcess process : this.processes) {
			if (process.isPaused()) {
				process.resume();
			}
			if (!process.isAlive()) {
				process.start();
			}
		}
	}

	void stopAll() {
		this.processes.forEach((process) -> process.stop(30));
	}

}
