package dev.idempotency.internal.outbox;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import dev.idempotency.test.TestInfrastructure;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;

/**
 * An application that relays an outbox table through the replication stream, as a
 * process of its own, so that a test can kill it (SIGKILL) with a batch in flight. It
 * connects to the test servers given on its command line, and runs until it is killed.
 */
public final class ReplicationRelayProcess {

	private ReplicationRelayProcess() {
	}

	/**
	 * Start the process.
	 * @param name the prefix of the tables (see {@link ReplicationFixtures})
	 * @param log where its output goes
	 * @param properties more properties, as {@code name=value}
	 * @return the process
	 * @throws IOException if it cannot be started
	 */
	static Process start(String name, Path log, String... properties) throws IOException {
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
				"-Xmx384m", "-cp", System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
				ReplicationRelayProcess.class.getName(), "--spring.datasource.url=" + postgres.jdbcUrl(),
				"--spring.datasource.username=" + postgres.username(),
				"--spring.datasource.password=" + postgres.password(),
				"--spring.kafka.bootstrap-servers=" + TestInfrastructure.kafkaBootstrapServers()));
		for (String property : OutboxFixtures.relayOn(name, "idempotency.outbox.replication.enabled=true",
				"idempotency.outbox.replication.standby-retry-interval=500ms")) {
			command.add("--" + property);
		}
		for (String property : properties) {
			command.add("--" + property);
		}
		return new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(log.toFile())
			.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
			.start();
	}

	public static void main(String[] args) throws InterruptedException {
		List<String> arguments = new ArrayList<>(List.of(args));
		arguments.addAll(List.of("--spring.main.banner-mode=off", "--idempotency.cache.enabled=false",
				"--spring.flyway.enabled=false", "--management.prometheus.metrics.export.enabled=false"));
		new SpringApplicationBuilder(OutboxFixtures.Writer.class).web(WebApplicationType.NONE)
			.run(arguments.toArray(String[]::new));
		System.out.println("STARTED");
		Thread.currentThread().join();
	}

}
