package dev.idempotency.internal.cache;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Stops asking a failing cache for a while. After {@code threshold} consecutive failures
 * the breaker opens for {@code openFor}; then one request is let through as a probe: its
 * success closes the breaker, its failure opens it again.
 */
final class CacheBreaker {

	private final int threshold;

	private final long openForNanos;

	private final AtomicInteger failures = new AtomicInteger();

	private final AtomicBoolean probing = new AtomicBoolean();

	private volatile boolean open;

	private volatile long openedAt;

	CacheBreaker(int threshold, Duration openFor) {
		this.threshold = threshold;
		this.openForNanos = openFor.toNanos();
	}

	/**
	 * Return whether a request may go to the cache now. While open, the first caller after
	 * the open period becomes the probe.
	 * @return whether to ask the cache
	 */
	boolean allowRequest() {
		if (!this.open) {
			return true;
		}
		if (System.nanoTime() - this.openedAt < this.openForNanos) {
			return false;
		}
		return this.probing.compareAndSet(false, true);
	}

	boolean isOpen() {
		return this.open;
	}

	/**
	 * Record a success.
	 * @return whether the breaker was open (the success was a probe that closed it)
	 */
	boolean success() {
		this.failures.set(0);
		this.probing.set(false);
		boolean wasOpen = this.open;
		this.open = false;
		return wasOpen;
	}

	void failure() {
		boolean failedProbe = this.probing.getAndSet(false);
		if (failedProbe || this.failures.incrementAndGet() >= this.threshold) {
			this.openedAt = System.nanoTime();
			this.open = true;
		}
	}

}
