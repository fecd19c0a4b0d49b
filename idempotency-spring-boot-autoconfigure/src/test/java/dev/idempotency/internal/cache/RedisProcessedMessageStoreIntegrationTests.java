package dev.idempotency.internal.cache;

import java.time.Duration;
import java.util.List;
import java.util.UUID;

import dev.idempotency.IdempotencyKeyInProgressException;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import dev.idempotency.internal.store.ProcessedMessageStoreContractTests;
import dev.idempotency.test.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@link RedisProcessedMessageStore} on a real Redis: the shared store contract, and the
 * lease and owner-token rules.
 */
class RedisProcessedMessageStoreIntegrationTests extends ProcessedMessageStoreContractTests {

	private static TestRedis redis;

	private static LettuceConnectionFactory connectionFactory;

	private static StringRedisTemplate template;

	private static RedisProcessedMessageStore store;

	@BeforeAll
	static void start() {
		redis = TestRedis.start();
		connectionFactory = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", redis.port()));
		connectionFactory.afterPropertiesSet();
		connectionFactory.start();
		template = new StringRedisTemplate(connectionFactory);
		store = store(Duration.ofMinutes(1));
	}

	@AfterAll
	static void stop() {
		connectionFactory.destroy();
		redis.close();
	}

	@Override
	protected ProcessedMessageStore store() {
		return store;
	}

	@Override
	protected boolean claimAndComplete(ProcessedMessage message) {
		Claim claim = store.claim(message);
		if (claim.isNew()) {
			assertThat(claim.complete()).isTrue();
		}
		return claim.isNew();
	}

	@Override
	protected List<Boolean> claimAllAndComplete(List<ProcessedMessage> messages) {
		List<Claim> claims = store.claimAll(messages);
		claims.stream().filter(Claim::isNew).forEach(Claim::complete);
		return claims.stream().map(Claim::isNew).toList();
	}

	@Override
	protected boolean claimAndFail(ProcessedMessage message) {
		Claim claim = store.claim(message);
		if (claim.isNew()) {
			claim.release();
		}
		return claim.isNew();
	}

	@Test
	void refusesAKeyWhoseClaimIsInProgress() {
		ProcessedMessage message = message("group", UUID.randomUUID().toString());
		Claim first = store.claim(message);
		assertThat(first.isNew()).isTrue();
		assertThat(store.isInProgress("group", message.key())).isTrue();
		assertThat(store.isProcessed("group", message.key())).isFalse();
		assertThatExceptionOfType(IdempotencyKeyInProgressException.class).isThrownBy(() -> store.claim(message))
			.withMessageContaining("another consumer");
		assertThat(first.complete()).isTrue();
		assertThat(store.claim(message).isNew()).isFalse();
	}

	@Test
	void anExpiredLeaseIsTakenOverAndTheStaleOwnerCanNeitherCompleteNorRelease() throws InterruptedException {
		RedisProcessedMessageStore shortLease = store(Duration.ofMillis(200));
		ProcessedMessage message = message("group", UUID.randomUUID().toString());
		Claim stale = shortLease.claim(message);
		assertThat(stale.isNew()).isTrue();
		Thread.sleep(400);
		Claim current = shortLease.claim(message);
		assertThat(current.isNew()).isTrue();
		// the stale consumer wakes up: it must not touch the new owner's claim
		assertThat(stale.complete()).isFalse();
		stale.release();
		assertThat(shortLease.isInProgress("group", message.key())).isTrue();
		assertThat(current.complete()).isTrue();
		assertThat(shortLease.isProcessed("group", message.key())).isTrue();
	}

	@Test
	void aStaleOwnerCannotReleaseAKeyCompletedByTheNewOwner() throws InterruptedException {
		RedisProcessedMessageStore shortLease = store(Duration.ofMillis(200));
		ProcessedMessage message = message("group", UUID.randomUUID().toString());
		Claim stale = shortLease.claim(message);
		Thread.sleep(400);
		Claim current = shortLease.claim(message);
		assertThat(current.complete()).isTrue();
		stale.release();
		assertThat(shortLease.isProcessed("group", message.key())).isTrue();
	}

	@Test
	void completedKeysExpireAfterTheirTtl() throws InterruptedException {
		RedisProcessedMessageStore shortTtl = new RedisProcessedMessageStore(template, "test:", Duration.ofMinutes(1),
				Duration.ofMillis(200));
		ProcessedMessage message = message("group", UUID.randomUUID().toString());
		assertThat(shortTtl.claim(message).complete()).isTrue();
		assertThat(shortTtl.isProcessed("group", message.key())).isTrue();
		Thread.sleep(400);
		assertThat(shortTtl.isProcessed("group", message.key())).isFalse();
	}

	@Test
	void keysOfDifferentScopesNeverCollide() {
		// "a:b" + "c" and "a" + "b:c" would meet in a naive "scope:key" layout
		assertThat(claimAndComplete(message("a:b", "c"))).isTrue();
		assertThat(claimAndComplete(message("a", "b:c"))).isTrue();
	}

	private static RedisProcessedMessageStore store(Duration lease) {
		return new RedisProcessedMessageStore(template, "test:", lease, Duration.ofDays(1));
	}

}
