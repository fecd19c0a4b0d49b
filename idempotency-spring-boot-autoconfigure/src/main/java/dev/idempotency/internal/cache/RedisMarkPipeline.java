package dev.idempotency.internal.cache;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiConsumer;

import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.AsyncCommand;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.RedisCommand;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Writes processed keys to Redis in pipelined batches of {@code SET key 1 PX ttl}. Adding
 * a key only queues it; a batch goes to the connection as one write and one flush
 * ({@link StatefulConnection#dispatch(java.util.Collection)}), so a record costs no
 * system call of its own and Redis reads a batch at once. The owner sends a batch when it
 * is full, before each lookup and periodically.
 * <p>
 * Fire-and-forget: nothing waits for a reply. A failed command feeds the breaker, as one
 * sent alone would; while the breaker is open a batch is dropped instead of sent. Memory
 * is bounded: keys queued or sent but not answered yet (Redis slow or unreachable, the
 * client buffering until it reconnects) never exceed {@link #MAX_OUTSTANDING}; keys beyond
 * that are dropped. A dropped key costs at most a later cache miss, since the database
 * decides.
 */
final class RedisMarkPipeline {

	/**
	 * Keys sent together once that many are queued.
	 */
	static final int BATCH_SIZE = 64;

	/**
	 * Keys queued or waiting for their reply beyond which new keys are dropped.
	 */
	static final int MAX_OUTSTANDING = 8192;

	private static final Log logger = LogFactory.getLog(RedisMarkPipeline.class);

	private static final byte[] PROCESSED = "1".getBytes(StandardCharsets.UTF_8);

	private final StatefulConnection<byte[], byte[]> connection;

	private final SetArgs ttl;

	private final CacheBreaker breaker;

	private final BiConsumer<@Nullable String, @Nullable Throwable> answered = this::answered;

	private final AtomicInteger outstanding = new AtomicInteger();

	private final AtomicBoolean dropping = new AtomicBoolean();

	private final ReentrantLock lock = new ReentrantLock();

	private List<byte[]> queued = new ArrayList<>(BATCH_SIZE);

	RedisMarkPipeline(StatefulConnection<byte[], byte[]> connection, SetArgs ttl, CacheBreaker breaker) {
		this.connection = connection;
		this.ttl = ttl;
		this.breaker = breaker;
	}

	/**
	 * Queue a key, and send the batch if it is full. Never blocks on Redis.
	 * @param key the Redis key
	 */
	void add(byte[] key) {
		if (this.outstanding.incrementAndGet() > MAX_OUTSTANDING) {
			this.outstanding.decrementAndGet();
			if (this.dropping.compareAndSet(false, true)) {
				logger.warn("Redis cache of processed keys is not answering fast enough: " + MAX_OUTSTANDING
						+ " keys wait to be written; dropping new keys until it catches up (the store decides)");
			}
			return;
		}
		List<byte[]> batch = null;
		this.lock.lock();
		try {
			this.queued.add(key);
			if (this.queued.size() >= BATCH_SIZE) {
				batch = take();
			}
		}
		finally {
			this.lock.unlock();
		}
		if (batch != null) {
			send(batch);
		}
	}

	/**
	 * Send the keys queued so far, if any.
	 */
	void flush() {
		List<byte[]> batch;
		this.lock.lock();
		try {
			if (this.queued.isEmpty()) {
				return;
			}
			batch = take();
		}
		finally {
			this.lock.unlock();
		}
		send(batch);
	}

	/**
	 * Return the keys queued or sent and not answered yet.
	 * @return the number of keys
	 */
	int outstanding() {
		return this.outstanding.get();
	}

	private List<byte[]> take() {
		List<byte[]> batch = this.queued;
		this.queued = new ArrayList<>(BATCH_SIZE);
		return batch;
	}

	private void send(List<byte[]> keys) {
		if (this.breaker.isOpen()) {
			this.outstanding.addAndGet(-keys.size());
			return;
		}
		List<RedisCommand<byte[], byte[], ?>> commands = new ArrayList<>(keys.size());
		for (byte[] key : keys) {
			CommandArgs<byte[], byte[]> args = new CommandArgs<>(ByteArrayCodec.INSTANCE).addKey(key)
				.addValue(PROCESSED);
			this.ttl.build(args);
			AsyncCommand<byte[], byte[], String> command = new AsyncCommand<>(
					new Command<>(CommandType.SET, new StatusOutput<>(ByteArrayCodec.INSTANCE), args));
			command.whenComplete(this.answered);
			commands.add(command);
		}
		try {
			this.connection.dispatch(commands);
		}
		catch (RuntimeException ex) {
			for (RedisCommand<byte[], byte[], ?> command : commands) {
				command.completeExceptionally(ex);
			}
		}
	}

	private void answered(@Nullable String reply, @Nullable Throwable failure) {
		this.outstanding.decrementAndGet();
		if (failure != null) {
			this.breaker.failure(failure);
		}
		else if (this.dropping.get()) {
			this.dropping.set(false);
		}
	}

}
