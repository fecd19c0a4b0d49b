package dev.idempotency.internal.cache;

import dev.idempotency.cache.ProcessedKeyCache;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.idempotency.metrics.CacheResult;
import dev.idempotency.metrics.IdempotencyMetrics;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.SetArgs;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * {@link ProcessedKeyCache} on Redis through Lettuce's asynchronous API, so that every
 * lookup is bounded by a short timeout of its own whatever the client's command timeout
 * is. Writes are sent without waiting. Repeated failures open a {@link CacheBreaker}:
 * while it is open, lookups are misses without asking Redis. Connecting happens off the
 * consumer thread, so a Redis that is down at start-up never blocks a listener.
 */
public final class RedisProcessedKeyCache implements ProcessedKeyCache {

	private static final Log logger = LogFactory.getLog(RedisProcessedKeyCache.class);

	private static final byte[] PROCESSED = "1".getBytes(StandardCharsets.UTF_8);

	private final LettuceConnectionFactory connectionFactory;

	private final RedisKeys keys;

	private final long timeoutNanos;

	private final SetArgs ttl;

	private final CacheBreaker breaker;

	private final IdempotencyMetrics metrics;

	private final Executor connector;

	private final AtomicBoolean connecting = new AtomicBoolean();

	private volatile @Nullable RedisClusterAsyncCommands<byte[], byte[]> commands;

	/**
	 * Create a cache.
	 * @param connectionFactory the application's Lettuce connection factory
	 * @param prefix prefix of every key the cache writes
	 * @param ttl how long a processed key is remembered
	 * @param timeout how long a lookup may take before it counts as a miss
	 * @param failureThreshold consecutive failures that open the breaker
	 * @param openFor how long the breaker stays open before it probes again
	 * @param metrics records lookups and the breaker state
	 * @param connector runs connection attempts off the consumer thread
	 */
	public RedisProcessedKeyCache(LettuceConnectionFactory connectionFactory, String prefix, Duration ttl,
			Duration timeout, int failureThreshold, Duration openFor, IdempotencyMetrics metrics,
			Executor connector) {
		this.connectionFactory = connectionFactory;
		this.keys = new RedisKeys(prefix);
		this.timeoutNanos = timeout.toNanos();
		this.ttl = SetArgs.Builder.px(ttl.toMillis());
		this.breaker = new CacheBreaker(failureThreshold, openFor);
		this.metrics = metrics;
		this.connector = connector;
		metrics.cacheBreaker(this.breaker::isOpen);
		// connect now, in the background, so the first poll already finds Redis ready
		commands();
	}

	@Override
	public boolean isProcessed(String scope, String key) {
		RedisClusterAsyncCommands<byte[], byte[]> redis = commands();
		if (redis == null || !this.breaker.allowRequest()) {
			this.metrics.cacheRequests(CacheResult.ERROR, 1);
			return false;
		}
		RedisFuture<Long> exists = redis.exists(this.keys.bytesOf(scope, key));
		try {
			Long count = exists.get(this.timeoutNanos, TimeUnit.NANOSECONDS);
			if (this.breaker.success()) {
				logger.info("Redis cache of processed keys answers again");
			}
			boolean hit = count != null && count > 0;
			this.metrics.cacheRequests(hit ? CacheResult.HIT : CacheResult.MISS, 1);
			return hit;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			failed(exists, ex);
		}
		catch (ExecutionException | TimeoutException | RuntimeException ex) {
			failed(exists, ex);
		}
		return false;
	}

	/**
	 * Look all keys up with one {@code MGET}: one command and one round trip on a single
	 * Redis; on Redis Cluster, Lettuce splits it by slot. The batch shares one timeout.
	 */
	@Override
	public boolean[] areProcessed(String scope, List<String> keys) {
		boolean[] processed = new boolean[keys.size()];
		RedisClusterAsyncCommands<byte[], byte[]> redis = commands();
		if (redis == null || !this.breaker.allowRequest()) {
			this.metrics.cacheRequests(CacheResult.ERROR, keys.size());
			return processed;
		}
		byte[][] redisKeys = new byte[keys.size()][];
		for (int i = 0; i < redisKeys.length; i++) {
			redisKeys[i] = this.keys.bytesOf(scope, keys.get(i));
		}
		RedisFuture<List<KeyValue<byte[], byte[]>>> answer = redis.mget(redisKeys);
		try {
			List<KeyValue<byte[], byte[]>> values = answer.get(this.timeoutNanos, TimeUnit.NANOSECONDS);
			int hits = 0;
			for (int i = 0; i < processed.length && i < values.size(); i++) {
				processed[i] = values.get(i).hasValue();
				hits += processed[i] ? 1 : 0;
			}
			if (this.breaker.success()) {
				logger.info("Redis cache of processed keys answers again");
			}
			this.metrics.cacheRequests(CacheResult.HIT, hits);
			this.metrics.cacheRequests(CacheResult.MISS, keys.size() - hits);
			return processed;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return batchFailed(answer, processed, ex);
		}
		catch (ExecutionException | TimeoutException | RuntimeException ex) {
			return batchFailed(answer, processed, ex);
		}
	}

	private boolean[] batchFailed(RedisFuture<?> answer, boolean[] processed, Exception ex) {
		answer.cancel(false);
		boolean wasOpen = this.breaker.isOpen();
		this.breaker.failure();
		this.metrics.cacheRequests(CacheResult.ERROR, processed.length);
		if (!wasOpen && this.breaker.isOpen()) {
			logger.warn("Redis cache of processed keys is failing (" + ex
					+ "); not asking it for a while, the store decides meanwhile");
		}
		return new boolean[processed.length];
	}

	@Override
	public void markProcessed(String scope, String key) {
		RedisClusterAsyncCommands<byte[], byte[]> redis = commands();
		if (redis == null || this.breaker.isOpen()) {
			return;
		}
		try {
			redis.set(this.keys.bytesOf(scope, key), PROCESSED, this.ttl).whenComplete((result, ex) -> {
				if (ex != null) {
					this.breaker.failure();
				}
			});
		}
		catch (RuntimeException ex) {
			this.breaker.failure();
		}
	}

	private void failed(RedisFuture<?> future, Exception ex) {
		future.cancel(false);
		boolean wasOpen = this.breaker.isOpen();
		this.breaker.failure();
		this.metrics.cacheRequests(CacheResult.ERROR, 1);
		if (!wasOpen && this.breaker.isOpen()) {
			logger.warn("Redis cache of processed keys is failing (" + ex
					+ "); not asking it for a while, the store decides meanwhile");
		}
	}

	private @Nullable RedisClusterAsyncCommands<byte[], byte[]> commands() {
		RedisClusterAsyncCommands<byte[], byte[]> redis = this.commands;
		if (redis == null && this.connecting.compareAndSet(false, true)) {
			this.connector.execute(this::connect);
		}
		return redis;
	}

	@SuppressWarnings("resource")
	private void connect() {
		try {
			RedisConnection connection = this.connectionFactory.getConnection();
			if (connection instanceof LettuceConnection lettuce) {
				// With a shared native connection (the default) this is the shared,
				// auto-reconnecting connection; it is kept for the life of the cache.
				this.commands = lettuce.getNativeConnection();
			}
		}
		catch (RuntimeException ex) {
			this.breaker.failure();
			logger.warn("Could not connect the Redis cache of processed keys: " + ex);
		}
		finally {
			this.connecting.set(false);
		}
	}

}
