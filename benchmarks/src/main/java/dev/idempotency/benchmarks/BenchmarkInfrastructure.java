package dev.idempotency.benchmarks;

import java.io.IOException;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import redis.embedded.RedisServer;

import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * Starts the real servers the benchmark talks to (a KRaft Kafka broker, PostgreSQL and
 * Redis), writes their addresses to a file and keeps them running until the process is
 * killed. Run it pinned to one CPU: the PostgreSQL and Redis processes it starts inherit
 * the pinning.
 */
public final class BenchmarkInfrastructure {

	private BenchmarkInfrastructure() {
	}

	public static void main(String[] args) throws Exception {
		Path addresses = Path.of(args[0]);
		EmbeddedKafkaKraftBroker kafka = new EmbeddedKafkaKraftBroker(1, 1);
		kafka.brokerProperty("group.initial.rebalance.delay.ms", "0");
		kafka.afterPropertiesSet();
		EmbeddedPostgres postgres = EmbeddedPostgres.builder()
			.setServerConfig("max_connections", "50")
			// for the replication relay (scenario OUTBOX_REPLICATION)
			.setServerConfig("wal_level", "logical")
			.start();
		int redisPort = freePort();
		RedisServer redis = RedisServer.newRedisServer()
			.port(redisPort)
			.bind("127.0.0.1")
			.setting("save \"\"")
			.setting("appendonly no")
			.build();
		redis.start();
		Runtime.getRuntime().addShutdownHook(new Thread(() -> {
			try {
				redis.stop();
				postgres.close();
			}
			catch (IOException ex) {
				// shutting down anyway
			}
			kafka.destroy();
		}));
		Properties properties = new Properties();
		properties.setProperty("kafka", kafka.getBrokersAsString());
		properties.setProperty("jdbc", postgres.getJdbcUrl("postgres", "postgres"));
		properties.setProperty("redis", "redis://127.0.0.1:" + redisPort);
		Path partial = addresses.resolveSibling(addresses.getFileName() + ".tmp");
		try (OutputStream out = Files.newOutputStream(partial)) {
			properties.store(out, "benchmark infrastructure");
		}
		Files.move(partial, addresses);
		System.out.println("Benchmark infrastructure ready: " + properties);
		Thread.currentThread().join();
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
	}

}
