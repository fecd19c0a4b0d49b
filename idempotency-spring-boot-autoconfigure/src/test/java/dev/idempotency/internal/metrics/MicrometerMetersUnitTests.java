package dev.idempotency.internal.metrics;

import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.metrics.Outcome;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The meters that are registered before they are used, and the oldest pending age, on a
 * {@link SimpleMeterRegistry}.
 */
class MicrometerMetersUnitTests {

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	@Test
	void registersEveryDecisionOfAListenerAtZeroWithTheListener() {
		new MicrometerIdempotencyMetrics(this.registry).listener("Payments.on", "jdbc");
		assertThat(this.registry.find("idempotency.messages").tag("listener", "Payments.on").counters())
			.extracting((counter) -> counter.getId().getTag("outcome") + "/" + counter.getId().getTag("source"))
			.containsExactlyInAnyOrder("processed/store", "duplicate/store", "duplicate/cache", "failed/store",
					"rejected/none");
		assertThat(this.registry.find("idempotency.messages").counters()).allMatch((c) -> c.count() == 0);
		assertThat(this.registry.get("idempotency.cache.requests").counters()).hasSize(3);
		assertThat(this.registry.get("idempotency.cleanup.deleted").counter()).isNotNull();
	}

	@Test
	void countsIntoThePreRegisteredCounters() {
		IdempotencyMetrics.ListenerMetrics listener = new MicrometerIdempotencyMetrics(this.registry)
			.listener("Payments.on", "jdbc");
		listener.messages(Outcome.DUPLICATE, DecisionSource.CACHE, 3);
		Counter cache = this.registry.get("idempotency.messages")
			.tags("outcome", "duplicate", "source", "cache")
			.counter();
		assertThat(cache.count()).isEqualTo(3.0);
		assertThat(this.registry.find("idempotency.messages").counters()).hasSize(5);
	}

	@Test
	void claimTimerPublishesHistogramBucketsFromATenthOfAMillisecond() {
		PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
		new MicrometerIdempotencyMetrics(prometheus).listener("Payments.on", "jdbc").claim(250_000);
		List<Double> bounds = prometheus.scrape()
			.lines()
			.filter((line) -> line.startsWith("idempotency_claim_seconds_bucket{"))
			.map((line) -> line.replaceAll(".*le=\"([^\"]+)\".*", "$1"))
			.filter((le) -> !le.equals("+Inf"))
			.map(Double::valueOf)
			.toList();
		assertThat(bounds).isNotEmpty();
		assertThat(bounds.get(0)).isBetween(0.0001, 0.001);
		assertThat(bounds.get(bounds.size() - 1)).isLessThanOrEqualTo(10.0);
	}

	@Test
	void oldestAgeIsZeroWhenNothingIsPendingAndAgesFromTheLastRead() throws InterruptedException {
		MicrometerOutboxMetrics metrics = new MicrometerOutboxMetrics(this.registry);
		assertThat(oldestAgeMillis()).isZero();
		metrics.oldestPending(Duration.ofSeconds(2));
		Thread.sleep(20);
		assertThat(oldestAgeMillis()).isGreaterThanOrEqualTo(2020.0);
		metrics.oldestPending(null);
		assertThat(oldestAgeMillis()).isZero();
	}

	private double oldestAgeMillis() {
		return this.registry.get("idempotency.outbox.oldest.age").timeGauge().value(TimeUnit.MILLISECONDS);
	}

}
