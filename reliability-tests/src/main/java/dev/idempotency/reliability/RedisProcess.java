package dev.idempotency.reliability;

import java.io.IOException;

import redis.embedded.RedisServer;

/**
 * Redis from the embedded-redis binary, a process of its own on a port picked at start;
 * stopping kills it, starting runs a new one on the same port (empty, as after a crash
 * without persistence).
 */
final class RedisProcess {

	private final int port = Ports.free();

	private RedisServer server;

	synchronized void start() throws IOException {
		this.server = RedisServer.newRedisServer()
			.port(this.port)
			.bind("127.0.0.1")
			.setting("save \"\"")
			.setting("appendonly no")
			.build();
		this.server.start();
	}

	synchronized void stop() throws IOException {
		if (this.server != null) {
			this.server.stop();
			this.server = null;
		}
	}

	int port() {
		return this.port;
	}

	String url() {
		return "redis://127.0.0.1:" + this.port;
	}

}
