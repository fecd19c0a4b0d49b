package dev.idempotency.internal.store;

import dev.idempotency.internal.key.StoredKey;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import dev.idempotency.IdempotencyKeyInProgressException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The behaviour every {@link ProcessedMessageStore} must show. Each implementation's test
 * extends this class.
 */
public abstract class ProcessedMessageStoreContractTests {

	/**
	 * Return the store under test.
	 * @return the store
	 */
	protected abstract ProcessedMessageStore store();

	/**
	 * Claim as a listener whose work succeeds would: the claim is made durable.
	 * @param message the message
	 * @return what the claim returned
	 */
	protected abstract boolean claimAndComplete(ProcessedMessage message);

	/**
	 * Claim as a listener whose work fails would: the claim is undone.
	 * @param message the message
	 * @return what the claim returned
	 */
	protected abstract boolean claimAndFail(ProcessedMessage message);

	/**
	 * Claim a batch as a listener whose work succeeds would.
	 * @param messages the messages
	 * @return for each message, whether its claim was new
	 */
	protected abstract List<Boolean> claimAllAndComplete(List<ProcessedMessage> messages);

	protected static ProcessedMessage message(String scope, String key) {
		return new ProcessedMessage(scope, key, "contract", 0, 42L);
	}

	// A store that cannot wait for a concurrent claim says so with an exception: that
	// caller did not win the key.
	private static boolean claimedBy(Future<Boolean> result) throws InterruptedException {
		try {
			return result.get();
		}
		catch (ExecutionException ex) {
			if (ex.getCause() instanceof IdempotencyKeyInProgressException) {
				return false;
			}
			throw new IllegalStateException(ex.getCause());
		}
	}

	@Test
	void claimsANewKey() {
		String key = UUID.randomUUID().toString();
		assertThat(claimAndComplete(message("group", key))).isTrue();
		assertThat(store().isProcessed("group", key)).isTrue();
	}

	@Test
	void reportsADuplicateOfACompletedKey() {
		String key = UUID.randomUUID().toString();
		claimAndComplete(message("group", key));
		assertThat(claimAndComplete(message("group", key))).isFalse();
	}

	@Test
	void treatsTheSameKeyInAnotherScopeAsNew() {
		String key = UUID.randomUUID().toString();
		claimAndComplete(message("group-a", key));
		assertThat(claimAndComplete(message("group-b", key))).isTrue();
	}

	@Test
	void leavesTheKeyFreeWhenTheWorkFails() {
		String key = UUID.randomUUID().toString();
		assertThat(claimAndFail(message("group", key))).isTrue();
		assertThat(store().isProcessed("group", key)).isFalse();
		assertThat(claimAndComplete(message("group", key))).isTrue();
	}

	@Test
	void keepsKeysThatUtf8CannotEncodeApart() {
		String run = UUID.randomUUID().toString();
		// keys as listeners store them; UTF-8 has no form for an unpaired surrogate (Java
		// writes '?' for it), so these three would become one key in the store
		List<ProcessedMessage> batch = List.of(message("group", StoredKey.of(run + "\uD800")),
				message("group", StoredKey.of(run + "\uDC00")), message("group", StoredKey.of(run + "?")));
		assertThat(claimAllAndComplete(batch)).containsExactly(true, true, true);
		assertThat(claimAndComplete(message("group", StoredKey.of(run + "\uD800")))).isFalse();
	}

	@Test
	void claimsABatchOnceAndOnlyTheFirstOccurrenceOfAKeyInIt() {
		String run = UUID.randomUUID().toString();
		claimAndComplete(message("group", run + "-old"));
		List<Boolean> claims = claimAllAndComplete(List.of(message("group", run + "-b"), message("group", run + "-old"),
				message("group", run + "-a"), message("group", run + "-b"), message("other", run + "-b")));
		assertThat(claims).containsExactly(true, false, true, false, true);
		assertThat(store().isProcessed("group", run + "-a")).isTrue();
		assertThat(claimAllAndComplete(List.of(message("group", run + "-a"), message("group", run + "-b"))))
			.containsExactly(false, false);
	}

	@Test
	void doesNotKnowKeysItNeverSaw() {
		assertThat(store().isProcessed("group", UUID.randomUUID().toString())).isFalse();
	}

	@Test
	void givesAKeyClaimedConcurrentlyToExactlyOneCaller() throws Exception {
		int callers = 8;
		for (int round = 0; round < 20; round++) {
			ProcessedMessage message = message("group", UUID.randomUUID().toString());
			CountDownLatch start = new CountDownLatch(1);
			ExecutorService executor = Executors.newFixedThreadPool(callers);
			try {
				List<Future<Boolean>> results = new ArrayList<>();
				for (int i = 0; i < callers; i++) {
					Callable<Boolean> claim = () -> {
						start.await();
						return claimAndComplete(message);
					};
					results.add(executor.submit(claim));
				}
				start.countDown();
				int winners = 0;
				for (Future<Boolean> result : results) {
					winners += claimedBy(result) ? 1 : 0;
				}
				assertThat(winners).isEqualTo(1);
			}
			finally {
				executor.shutdownNow();
			}
		}
	}

}
