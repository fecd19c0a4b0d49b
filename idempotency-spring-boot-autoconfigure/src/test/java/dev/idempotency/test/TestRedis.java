package dev.idempotency.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

import redis.embedded.RedisServer;

/**
 * A real Redis server (the embedded-redis binary) on a random port, that a test can stop
 * and start again on the same port. Redis is embedded whether or not Docker is there,
 * because a container restarted by Testcontainers comes back on another port.
 */
public final class TestRedis implements AutoCloseable {

	private final int port;

	private RedisServer server;

	private TestRedis(int port) {
		this.port = port;
	}

	/**
	 * Start a new server.
	 * @return the running server
	 */
	public static TestRedis start() {
		TestRedis redis = new TestRedis(freePort());
		redis.restart();
		return redis;
	}

	/**
	 * Reserve a free port for a server that is not running yet, as a Redis that is down;
	 * {@link #restart()} starts it there.
	 * @return the server, not running
	 */
	public static TestRedis notRunning() {
		return new TestRedis(freePort());
	}

	public int port() {
		return this.port;
	}

	/**
	 * Spring Boot property that connects an application to this server.
	 * @return the property
	 */
	public String springProperty() {
		return "spring.data.redis.url=redis://127.0.0.1:" + this.port;
	}

	/**
	 * Stop the server; its data is lost.
	 */
	public synchronized void stop() {
		if (this.server != null) {
			try {
				this.server.stop();
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
			this.server = null;
		}
	}

	/**
	 * Start the server again on the same port, empty.
	 */
	public synchronized void restart() {
		stop();
		try {
			this.server = RedisServer.newRedisServer()
				.port(this.port)
				.bind("127.0.0.1")
				.setting("save \"\"")
				.setting("appendonly no")
				.build();
			this.server.start();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start embedded Redis on port " + this.port, ex);
		}
	}

	@Override
	public void close() {
		stop();
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
