package dev.idempotency.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.jspecify.annotations.Nullable;
import redis.embedded.RedisServer;

import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * Real servers (a KRaft broker, PostgreSQL, Redis) that the sample starts for itself on
 * free ports when the configuration names none, so that it runs with only a JDK.
 */
final class EmbeddedServers implements AutoCloseable {

	private final Map<String, Object> properties = new LinkedHashMap<>();

	private final List<String> started = new ArrayList<>();

	private @Nullable EmbeddedKafkaKraftBroker kafka;

	private @Nullable EmbeddedPostgres postgres;

	private @Nullable RedisServer redis;

	private int redisPort;

	void startKafka() {
		EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 1);
		broker.brokerProperty("group.initial.rebalance.delay.ms", "0");
		broker.afterPropertiesSet();
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
			try {
				this.redis.stop();
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
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
			this.kafka.destroy();
			this.kafka = null;
		}
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

	private void startRedisServer() {
		try {
			this.redis = RedisServer.newRedisServer()
				.port(this.redisPort)
				.bind("127.0.0.1")
				.setting("save \"\"")
				.setting("appendonly no")
				.build();
			this.redis.start();
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
