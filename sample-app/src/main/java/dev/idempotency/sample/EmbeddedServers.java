package dev.idempotency.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.apache.kafka.common.utils.Exit;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.logging.LogLevel;
import org.springframework.boot.logging.LoggerConfiguration;
import org.springframework.boot.logging.LoggingSystem;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * Real servers (a KRaft broker, PostgreSQL, Redis) that the sample starts for itself on
 * free ports when the configuration names none, so that it runs with only a JDK.
 * <p>
 * They stop when {@link #close()} is called, after the beans that use them, and at no
 * other time: none of them registers a JVM shutdown hook, since such a hook runs at the
 * same time as the one that closes the context (it would stop a server, or delete its
 * files, while the application and the server itself still use them).
 */
final class EmbeddedServers implements AutoCloseable {

	private static final String NETWORK_CLIENT = "org.apache.kafka.clients.NetworkClient";

	private final Map<String, Object> properties = new LinkedHashMap<>();

	private final List<String> started = new ArrayList<>();

	private @Nullable EmbeddedKafkaKraftBroker kafka;

	private final List<Runnable> kafkaCleanups = new ArrayList<>();

	private @Nullable EmbeddedPostgres postgres;

	private @Nullable EmbeddedRedis redis;

	private int redisPort;

	void startKafka() {
		EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 1);
		broker.brokerProperty("group.initial.rebalance.delay.ms", "0");
		// one partition of consumer offsets to load at start and to unload at stop, not 50
		broker.brokerProperty("offsets.topic.num.partitions", "1");
		// Kafka's test kit deletes the broker's log directory in a JVM shutdown hook, which
		// races the broker's shutdown (ERRORs and WARNs for every partition); the directory
		// is deleted in close() instead, once the broker stopped
		Exit.setShutdownHookAdder((name, cleanup) -> this.kafkaCleanups.add(cleanup));
		try {
			broker.afterPropertiesSet();
		}
		finally {
			Exit.resetShutdownHookAdder();
		}
		this.kafka = broker;
		this.properties.put("spring.kafka.bootstrap-servers", broker.getBrokersAsString());
		this.started.add("Kafka (KRaft) at " + broker.getBrokersAsString());
	}

	void startPostgres() {
		try {
			this.postgres = EmbeddedPostgres.builder()
				// stopped when the context closes, after the beans that use it
				.setRegisterShutdownHook(false)
				// so that the outbox can be relayed from the replication stream
				// (idempotency.outbox.replication.enabled=true)
				.setServerConfig("wal_level", "logical")
				.start();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start embedded PostgreSQL", ex);
		}
		String url = this.postgres.getJdbcUrl("postgres", "postgres");
		this.properties.put("spring.datasource.url", url);
		this.properties.put("spring.datasource.username", "postgres");
		this.properties.put("spring.datasource.password", "postgres");
		this.started.add("PostgreSQL at " + url);
	}

	void startRedis() {
		this.redisPort = freePort();
		startRedisServer();
		this.properties.put("spring.data.redis.url", "redis://127.0.0.1:" + this.redisPort);
		this.started.add("Redis at 127.0.0.1:" + this.redisPort);
	}

	/**
	 * Whether Redis is embedded, so that the demo can stop it for a while.
	 * @return whether Redis is embedded
	 */
	boolean hasRedis() {
		return this.redisPort != 0;
	}

	/**
	 * Stop the embedded Redis; its data is lost.
	 */
	synchronized void stopRedis() {
		if (this.redis != null) {
			this.redis.stop();
			this.redis = null;
		}
	}

	/**
	 * Start the embedded Redis again, empty, on the same port.
	 */
	synchronized void restartRedis() {
		stopRedis();
		startRedisServer();
	}

	Map<String, Object> properties() {
		return this.properties;
	}

	List<String> started() {
		return this.started;
	}

	@Override
	public synchronized void close() {
		stopRedis();
		if (this.kafka != null) {
			destroyQuietly(this.kafka);
			this.kafka = null;
		}
		this.kafkaCleanups.forEach(Runnable::run);
		this.kafkaCleanups.clear();
		if (this.postgres != null) {
			try {
				this.postgres.close();
			}
			catch (IOException ex) {
				// shutting down anyway
			}
			this.postgres = null;
		}
	}

	// A KRaft broker in combined mode closes one of its own clients twice as it stops, and
	// Kafka's NetworkClient logs a WARN for the second close. The application's clients
	// are closed by then, so only the broker's own are quiet while it stops.
	private static void destroyQuietly(EmbeddedKafkaKraftBroker kafka) {
		LoggingSystem logging = LoggingSystem.get(EmbeddedServers.class.getClassLoader());
		LoggerConfiguration configuration = logging.getLoggerConfiguration(NETWORK_CLIENT);
		LogLevel level = (configuration != null) ? configuration.getConfiguredLevel() : null;
		logging.setLogLevel(NETWORK_CLIENT, LogLevel.ERROR);
		try {
			kafka.destroy();
		}
		finally {
			logging.setLogLevel(NETWORK_CLIENT, level);
		}
	}

	private void startRedisServer() {
		try {
			this.redis = EmbeddedRedis.start(this.redisPort);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start embedded Redis on port " + this.redisPort, ex);
		}
	}

	private static int freePort() {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
