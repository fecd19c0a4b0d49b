package dev.idempotency.metrics;

import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * {@link IdempotencyMetrics} on a Micrometer {@link MeterRegistry}.
 */
public final class MicrometerIdempotencyMetrics implements IdempotencyMetrics {

	private final MeterRegistry registry;

	private final Counter[] cacheRequests;

	private final Counter cleanupDeleted;

	/**
	 * Create a recorder on the given registry.
	 * @param registry the registry
	 */
	public MicrometerIdempotencyMetrics(MeterRegistry registry) {
		this.registry = registry;
		this.cleanupDeleted = Counter.builder(IdempotencyMeters.CLEANUP_DELETED.meterName())
			.description("Processed keys deleted after their retention")
			.register(registry);
		this.cacheRequests = new Counter[CacheResult.values().length];
		for (CacheResult result : CacheResult.values()) {
			this.cacheRequests[result.ordinal()] = Counter.builder(IdempotencyMeters.CACHE_REQUESTS.meterName())
				.description("Lookups of processed keys in the cache, by result")
				.tag("result", result.tag())
				.register(registry);
		}
	}

	@Override
	public ListenerMetrics listener(String listener, String store) {
		return new MicrometerListenerMetrics(this.registry, listener, store);
	}

	@Override
	public void cacheRequests(CacheResult result, int count) {
		if (count > 0) {
			this.cacheRequests[result.ordinal()].increment(count);
		}
	}

	@Override
	public void cleanupDeleted(long count) {
		this.cleanupDeleted.increment(count);
	}

	@Override
	public void cacheBreaker(BooleanSupplier open) {
		Gauge.builder(IdempotencyMeters.CACHE_BREAKER_OPEN.meterName(), () -> open.getAsBoolean() ? 1 : 0)
			.description("Whether the cache breaker is open (1): the cache is not being asked")
			.register(this.registry);
	}

	private static final class MicrometerListenerMetrics implements ListenerMetrics {

		private final MeterRegistry registry;

		private final String listener;

		private final Timer claim;

		// Counters are registered on first use, so that a listener that never sees a
		// duplicate exports no zero-valued duplicate series. A race registers the same
		// meter twice, which Micrometer resolves to one instance.
		private final Counter[][] messages = new Counter[Outcome.values().length][DecisionSource.values().length];

		MicrometerListenerMetrics(MeterRegistry registry, String listener, String store) {
			this.registry = registry;
			this.listener = listener;
			this.claim = Timer.builder(IdempotencyMeters.CLAIM.meterName())
				.description("Time to claim an idempotency key in the store")
				.tag("listener", listener)
				.tag("store", store)
				.register(registry);
		}

		@Override
		public void messages(Outcome outcome, DecisionSource source, int count) {
			if (count <= 0) {
				return;
			}
			Counter counter = this.messages[outcome.ordinal()][source.ordinal()];
			if (counter == null) {
				counter = Counter.builder(IdempotencyMeters.MESSAGES.meterName())
					.description("Messages seen by @Idempotent listeners, by decision")
					.tag("listener", this.listener)
					.tag("outcome", outcome.tag())
					.tag("source", source.tag())
					.register(this.registry);
				this.messages[outcome.ordinal()][source.ordinal()] = counter;
			}
			counter.increment(count);
		}

		@Override
		public void claim(long nanos) {
			this.claim.record(nanos, TimeUnit.NANOSECONDS);
		}

	}

}
