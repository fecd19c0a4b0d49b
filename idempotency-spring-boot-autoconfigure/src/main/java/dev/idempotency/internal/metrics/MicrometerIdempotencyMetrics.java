package dev.idempotency.internal.metrics;

import dev.idempotency.metrics.IdempotencyMeters;
import dev.idempotency.metrics.CacheResult;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.metrics.Outcome;
import java.time.Duration;
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

		// The decisions a listener can take, registered with the listener (before its first
		// message is counted), so that a panel or an alert over any of them reads 0, not
		// "no data", until the first such message.
		private static final Outcome[] OUTCOMES = { Outcome.PROCESSED, Outcome.DUPLICATE, Outcome.DUPLICATE,
				Outcome.FAILED, Outcome.REJECTED };

		private static final DecisionSource[] SOURCES = { DecisionSource.STORE, DecisionSource.STORE,
				DecisionSource.CACHE, DecisionSource.STORE, DecisionSource.NONE };

		private final Counter[][] messages = new Counter[Outcome.values().length][DecisionSource.values().length];

		MicrometerListenerMetrics(MeterRegistry registry, String listener, String store) {
			this.registry = registry;
			this.listener = listener;
			// a histogram, so that quantiles can be aggregated across instances
			// (histogram_quantile); claims take from a tenth of a millisecond up
			this.claim = Timer.builder(IdempotencyMeters.CLAIM.meterName())
				.description("Time to claim an idempotency key in the store")
				.tag("listener", listener)
				.tag("store", store)
				.publishPercentileHistogram()
				.minimumExpectedValue(Duration.ofNanos(100_000))
				.maximumExpectedValue(Duration.ofSeconds(10))
				.register(registry);
			for (int i = 0; i < OUTCOMES.length; i++) {
				counter(OUTCOMES[i], SOURCES[i]);
			}
		}

		@Override
		public void messages(Outcome outcome, DecisionSource source, int count) {
			if (count > 0) {
				counter(outcome, source).increment(count);
			}
		}

		// A race registers the same meter twice, which Micrometer resolves to one instance.
		private Counter counter(Outcome outcome, DecisionSource source) {
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
			return counter;
		}

		@Override
		public void claim(long nanos) {
			this.claim.record(nanos, TimeUnit.NANOSECONDS);
		}

	}

}
