package dev.idempotency.internal.cache;

import java.nio.charset.StandardCharsets;

/**
 * The Redis key of a (scope, key) pair: {@code <prefix><scope length>:<scope>:<key>}. The
 * length makes the layout unambiguous whatever characters scope and key contain. Each
 * key is a single Redis key touched by single-key commands and scripts, so it works on
 * Redis Cluster.
 */
final class RedisKeys {

	private final String prefix;

	RedisKeys(String prefix) {
		this.prefix = prefix;
	}

	String of(String scope, String key) {
		return this.prefix + scope.length() + ":" + scope + ":" + key;
	}

	byte[] bytesOf(String scope, String key) {
		return of(scope, key).getBytes(StandardCharsets.UTF_8);
	}

}
