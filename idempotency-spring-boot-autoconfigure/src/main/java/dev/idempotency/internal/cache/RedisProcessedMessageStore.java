package dev.idempotency.internal.cache;

import dev.idempotency.internal.key.RecordCoordinates;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.idempotency.IdempotencyKeyInProgressException;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;

import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * {@link ProcessedMessageStore} on Redis alone, for applications without a database for
 * this or that accept weaker guarantees for throughput.
 * <p>
 * A key is claimed atomically by a Lua script as {@code IN_PROGRESS} with a fresh owner
 * token and a lease (a TTL). When the listener succeeds, the claim is completed: the
 * value becomes {@code COMPLETED} with the long TTL, only if the caller still owns the key
 * (or nobody took it over after its lease expired). When the listener fails, the claim is
 * released, again only by its owner. A lease that expired (its consumer died or stalled)
 * lets the next claim take the key over; the owner token keeps the stale consumer from
 * overwriting or deleting the new owner's claim.
 * <p>
 * What this store does not guarantee: the claim and the listener's effects are not one
 * atomic commit. A consumer that dies after its effects but before completing leaves an
 * {@code IN_PROGRESS} key whose lease expires, and the redelivered message is processed
 * again. A consumer slower than its lease may apply its effects while another consumer
 * applies them too. Redis replication is asynchronous: a failover can lose recent keys.
 */
public final class RedisProcessedMessageStore implements ProcessedMessageStore {

	private static final String IN_PROGRESS = "P:";

	private static final String COMPLETED = "C:";

	private static final RedisScript<Long> CLAIM = RedisScript.of("""
			local current = redis.call('GET', KEYS[1])
			if not current then
			  redis.call('SET', KEYS[1], 'P:' .. ARGV[1], 'PX', ARGV[2])
			  return 1
			end
			if string.sub(current, 1, 2) == 'C:' then
			  return 0
			end
			return -1
			""", Long.class);

	private static final RedisScript<Long> COMPLETE = RedisScript.of("""
			local current = redis.call('GET', KEYS[1])
			if (not current) or current == 'P:' .. ARGV[1] then
			  redis.call('SET', KEYS[1], 'C:' .. ARGV[1], 'PX', ARGV[2])
			  return 1
			end
			if current == 'C:' .. ARGV[1] then
			  return 1
			end
			return 0
			""", Long.class);

	private static final RedisScript<Long> RELEASE = RedisScript.of("""
			if redis.call('GET', KEYS[1]) == 'P:' .. ARGV[1] then
			  return redis.call('DEL', KEYS[1])
			end
			return 0
			""", Long.class);

	private static final long FIRST_COMPLETION_PAUSE_MILLIS = 50;

	private static final long MAX_COMPLETION_PAUSE_MILLIS = 1000;

	private final StringRedisTemplate redis;

	private final RedisKeys keys;

	private final String lease;

	private final long leaseNanos;

	private final String ttl;

	/**
	 * Create a store.
	 * @param redis the template on the application's Redis
	 * @param prefix prefix of every key the store writes
	 * @param lease how long a claim holds a key before another consumer may take it over
	 * @param ttl how long a completed key is remembered
	 */
	public RedisProcessedMessageStore(StringRedisTemplate redis, String prefix, Duration lease, Duration ttl) {
		this.redis = redis;
		this.keys = new RedisKeys(prefix);
		this.lease = Long.toString(lease.toMillis());
		this.leaseNanos = lease.toNanos();
		this.ttl = Long.toString(ttl.toMillis());
	}

	@Override
	public Claim claim(ProcessedMessage message) {
		String key = this.keys.of(message.scope(), message.key());
		String owner = UUID.randomUUID().toString();
		long claimedAt = System.nanoTime();
		Long result = this.redis.execute(CLAIM, List.of(key), owner, this.lease);
		if (result == null || result < 0) {
			throw new IdempotencyKeyInProgressException("Key in scope '" + message.scope()
					+ "' is being processed by another consumer (record " + RecordCoordinates.describe(message) + "); retry later");
		}
		return (result == 1) ? new OwnedClaim(key, owner, claimedAt + this.leaseNanos) : Claim.DUPLICATE;
	}

	@Override
	public boolean isProcessed(String scope, String key) {
		String value = this.redis.opsForValue().get(this.keys.of(scope, key));
		return value != null && value.startsWith(COMPLETED);
	}

	@Override
	public boolean joinsTransaction() {
		return false;
	}

	@Override
	public String name() {
		return "redis";
	}

	/**
	 * Return whether the key is claimed and not yet completed. For diagnostics and tests.
	 * @param scope the scope
	 * @param key the key
	 * @return whether a claim is in progress
	 */
	public boolean isInProgress(String scope, String key) {
		String value = this.redis.opsForValue().get(this.keys.of(scope, key));
		return value != null && value.startsWith(IN_PROGRESS);
	}

	private final class OwnedClaim implements Claim {

		private final String key;

		private final String owner;

		private final long leaseEnds;

		OwnedClaim(String key, String owner, long leaseEnds) {
			this.key = key;
			this.owner = owner;
			this.leaseEnds = leaseEnds;
		}

		@Override
		public boolean isNew() {
			return true;
		}

		@Override
		public boolean complete() {
			// The work is done: a completion lost to a blip of Redis would leave the key in
			// progress, and a later copy of the message would be applied again once the lease
			// ends. Try again while the lease still holds the key (completing twice is harmless).
			long pauseMillis = FIRST_COMPLETION_PAUSE_MILLIS;
			while (true) {
				try {
					Long result = RedisProcessedMessageStore.this.redis.execute(COMPLETE, List.of(this.key), this.owner,
							RedisProcessedMessageStore.this.ttl);
					return result != null && result == 1;
				}
				catch (TransientDataAccessException | DataAccessResourceFailureException ex) {
					if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pauseMillis) - this.leaseEnds >= 0) {
						throw ex;
					}
					try {
						Thread.sleep(pauseMillis);
					}
					catch (InterruptedException interrupted) {
						Thread.currentThread().interrupt();
						throw ex;
					}
					pauseMillis = Math.min(pauseMillis * 2, MAX_COMPLETION_PAUSE_MILLIS);
				}
			}
		}

		@Override
		public void release() {
			RedisProcessedMessageStore.this.redis.execute(RELEASE, List.of(this.key), this.owner);
		}

	}

}
