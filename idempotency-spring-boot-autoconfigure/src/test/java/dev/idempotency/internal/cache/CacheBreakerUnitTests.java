package dev.idempotency.internal.cache;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link CacheBreaker}.
 */
class CacheBreakerUnitTests {

	@Test
	void opensAfterTheThresholdOfConsecutiveFailures() {
		CacheBreaker breaker = new CacheBreaker(3, Duration.ofMinutes(1));
		breaker.failure();
		breaker.failure();
		assertThat(breaker.allowRequest()).isTrue();
		breaker.failure();
		assertThat(breaker.isOpen()).isTrue();
		assertThat(breaker.allowRequest()).isFalse();
	}

	@Test
	void aSuccessResetsTheCountOfFailures() {
		CacheBreaker breaker = new CacheBreaker(3, Duration.ofMinutes(1));
		breaker.failure();
		breaker.failure();
		assertThat(breaker.success()).isFalse();
		breaker.failure();
		breaker.failure();
		assertThat(breaker.isOpen()).isFalse();
	}

	@Test
	void letsOneProbeThroughAfterTheOpenPeriod() throws InterruptedException {
		CacheBreaker breaker = new CacheBreaker(1, Duration.ofMillis(50));
		breaker.failure();
		assertThat(breaker.allowRequest()).isFalse();
		Thread.sleep(100);
		assertThat(breaker.allowRequest()).isTrue();
		assertThat(breaker.allowRequest()).as("only one probe at a time").isFalse();
		assertThat(breaker.success()).isTrue();
		assertThat(breaker.isOpen()).isFalse();
		assertThat(breaker.allowRequest()).isTrue();
	}

	@Test
	void aFailedProbeOpensTheBreakerAgain() throws InterruptedException {
		CacheBreaker breaker = new CacheBreaker(5, Duration.ofMillis(50));
		for (int i = 0; i < 5; i++) {
			breaker.failure();
		}
		Thread.sleep(100);
		assertThat(breaker.allowRequest()).isTrue();
		breaker.failure();
		assertThat(breaker.isOpen()).isTrue();
		assertThat(breaker.allowRequest()).isFalse();
	}

}
