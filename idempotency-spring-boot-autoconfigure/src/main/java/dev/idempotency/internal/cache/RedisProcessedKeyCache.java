package dev.idempotency.internal.cache;

import dev.idempotency.cache.ProcessedKeyCache;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.idempotency.metrics.CacheResult;
import dev.idempotency.metrics.IdempotencyMetrics;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
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
 * is. Repeated failures open a {@link CacheBreaker}: while it is open, lookups are misses
 * without asking Redis and nothing is written. Connecting happens off the consumer
 * thread, so a Redis that is down at start-up never blocks a listener.
 * <p>
 * Writes ({@code SET key 1 PX ttl}) are fire-and-forget and pipelined:
 * {@link #markProcessed} only queues the key, and the queued keys go to Redis as one
 * batch, in one write and one flush on the application's shared connection, when 64 are
 * queued, before each lookup (the start of the consumer's next poll, so the keys of a
 * poll go out together), and every 20 ms from a thread of the cache's own, so that the
 * last keys of an idle consumer still reach Redis soon. Keys beyond 8192 waiting to be
 * written or answered are dropped: a slow or unreachable Redis never makes the queue grow
 * without bound, and a lost key costs at most a cache miss. On Redis Cluster, Lettuce
 * splits a batch by slot and sends each part to its node. {@link #close} stops the
 * periodic flush after a last one.
 */
public final class RedisProcessedKeyCache implements ProcessedKeyCache, AutoCloseable {

	private static final Log logger = LogFactory.getLog(RedisProcessedKeyCache.class);

	private static final byte[] PROCESSED = "1".getBytes(StandardCharsets.UTF_8);

	/**
	 * Period of the flush that sends keys queued since the last lookup.
	 */
	static final long FLUSH_INTERVAL_MILLIS = 20;

	private final LettuceConnectionFactory connectionFactory;

	private final RedisKeys keys;

	private final long timeoutNanos;

	private final SetArgs ttl;

	private final CacheBreaker breaker;

	private final IdempotencyMetrics metrics;

	private final Executor connector;

	private final AtomicBoolean connecting = new AtomicBoolean();

	private final ScheduledExecutorService flusher;

	private volatile @Nullable RedisClusterAsyncCommands<byte[], byte[]> commands;

	private volatile @Nullable RedisMarkPipeline marks;

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
		this.flusher = Executors.newSingleThreadScheduledExecutor((task) -> {
			Thread thread = new Thread(task, "idempotency-redis-flush");
			thread.setDaemon(true);
			return thread;
		});
		this.flusher.scheduleWithFixedDelay(this::flushMarks, FLUSH_INTERVAL_MILLIS, FLUSH_INTERVAL_MILLIS,
				TimeUnit.MILLISECONDS);
		// connect now, in the background, so the first poll already finds Redis ready
		commands();
	}

	@Override
	public boolean isProcessed(String scope, String key) {
		flushMarks();
		RedisClusterAsyncCommands<byte[], byte[]> redis = commands();
		if (redis == null || !this.breaker.allowRequest()) {
			this.metrics.cacheRequests(CacheResult.ERROR, 1);
			return false;
		}
		RedisFuture<Long> exists = redis.exists(this.keys.bytesOf(scope, key));
		try {
			Long count = exists.get(this.timeoutNanos, TimeUnit.NANOSECONDS);
			this.breaker.success();
			boolean hit = count != null && count > 0;
			this.metrics.cacheRequests(hit ? CacheResult.HIT : CacheResult.MISS, 1);
			return hit;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			failed(exists, 1, ex);
		}
		catch (ExecutionException | TimeoutException | RuntimeException ex) {
			failed(exists, 1, ex);
		}
		return false;
	}

	/**
	 * Look all keys up with one {@code MGET}: one command and one round trip on a single
	 * Redis; on Redis Cluster, Lettuce splits it by slot. The batch shares one timeout.
	 */
	@Override
	public boolean[] areProcessed(String scope, List<String> keys) {
		flushMarks();
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
			this.breaker.success();
			this.metrics.cacheRequests(CacheResult.HIT, hits);
			this.metrics.cacheRequests(CacheResult.MISS, keys.size() - hits);
			return processed;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			failed(answer, keys.size(), ex);
		}
		catch (ExecutionException | TimeoutException | RuntimeException ex) {
			failed(answer, keys.size(), ex);
		}
		return new boolean[keys.size()];
	}

	/**
	 * Queue the key to be written with the next batch; see the class description.
	 */
	@Override
	public void markProcessed(String scope, String key) {
		RedisClusterAsyncCommands<byte[], byte[]> redis = commands();
		if (redis == null || this.breaker.isOpen()) {
			return;
		}
		try {
			RedisMarkPipeline pipeline = this.marks;
			if (pipeline != null) {
				pipeline.add(this.keys.bytesOf(scope, key));
				return;
			}
			// a connection that does not expose its stateful connection: one command each
			redis.set(this.keys.bytesOf(scope, key), PROCESSED, this.ttl).whenComplete((result, ex) -> {
				if (ex != null) {
					this.breaker.failure(ex);
				}
			});
		}
		catch (RuntimeException ex) {
			this.breaker.failure(ex);
		}
	}

	/**
	 * Stop the periodic flush, after sending the keys still queued.
	 */
	@Override
	public void close() {
		this.flusher.shutdownNow();
		flushMarks();
	}

	boolean isClosed() {
		return this.flusher.isShutdown();
	}

	int outstandingMarks() {
		RedisMarkPipeline pipeline = this.marks;
		return (pipeline != null) ? pipeline.outstanding() : 0;
	}

	private void flushMarks() {
		RedisMarkPipeline pipeline = this.marks;
		if (pipeline != null) {
			try {
				pipeline.flush();
			}
			catch (RuntimeException ex) {
				// never let an exception end the periodic flush
				this.breaker.failure(ex);
			}
		}
	}

	private void failed(RedisFuture<?> future, int requests, Exception ex) {
		future.cancel(false);
		this.breaker.failure(ex);
		this.metrics.cacheRequests(CacheResult.ERROR, requests);
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
				RedisClusterAsyncCommands<byte[], byte[]> redis = lettuce.getNativeConnection();
				StatefulConnection<byte[], byte[]> stateful = statefulConnection(redis);
				if (stateful != null) {
					this.marks = new RedisMarkPipeline(stateful, this.ttl, this.breaker);
				}
				this.commands = redis;
			}
		}
		catch (RuntimeException ex) {
			this.breaker.failure(ex);
			logger.warn("Could not connect the Redis cache of processed keys: " + ex);
		}
		finally {
			this.connecting.set(false);
		}
	}

	private static @Nullable StatefulConnection<byte[], byte[]> statefulConnection(
			RedisClusterAsyncCommands<byte[], byte[]> redis) {
		if (redis instanceof RedisAsyncCommands<byte[], byte[]> standalone) {
			return standalone.getStatefulConnection();
		}
		if (redis instanceof RedisAdvancedClusterAsyncCommands<byte[], byte[]> cluster) {
			return cluster.getStatefulConnection();
		}
		return null;
	}

}
