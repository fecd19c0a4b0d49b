package dev.idempotency.internal.metrics;

import dev.idempotency.metrics.IdempotencyMeters;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import dev.idempotency.outbox.OutboxMetrics;
import dev.idempotency.outbox.OutboxStats;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import org.jspecify.annotations.Nullable;

/**
 * {@link OutboxMetrics} on a Micrometer {@link MeterRegistry}: the
 * {@code idempotency.outbox.*} meters.
 */
public final class MicrometerOutboxMetrics implements OutboxMetrics {

	private final MeterRegistry registry;

	private final Map<String, TopicMeters> topics = new ConcurrentHashMap<>();

	private final AtomicReference<OutboxStats> stats = new AtomicReference<>(
			new OutboxStats(0, 0, null));

	private final AtomicReference<OldestPending> oldest = new AtomicReference<>(OldestPending.NONE);

	private final AtomicLong replicationLag = new AtomicLong();

	private final AtomicBoolean replicationLagRegistered = new AtomicBoolean();

	public MicrometerOutboxMetrics(MeterRegistry registry) {
		this.registry = registry;
		Gauge.builder(IdempotencyMeters.OUTBOX_PENDING.meterName(), this.stats, (s) -> s.get().pending())
			.description("Outbox events waiting to be published")
			.register(registry);
		Gauge.builder(IdempotencyMeters.OUTBOX_DEAD.meterName(), this.stats, (s) -> s.get().dead())
			.description("Outbox events that failed every attempt")
			.register(registry);
		TimeGauge.builder(IdempotencyMeters.OUTBOX_OLDEST_AGE.meterName(), this.oldest, TimeUnit.NANOSECONDS,
				(o) -> o.get().ageNow(System.nanoTime()))
			.description("Age of the oldest pending outbox event")
			.register(registry);
	}

	@Override
	public void published(String topic, Duration latency) {
		TopicMeters meters = this.topics.computeIfAbsent(topic, this::topicMeters);
		meters.published().increment();
		meters.latency().record(latency);
	}

	private TopicMeters topicMeters(String topic) {
		return new TopicMeters(Counter.builder(IdempotencyMeters.OUTBOX_PUBLISHED.meterName())
			.description("Outbox events acknowledged by the broker")
			.tag("topic", topic)
			.register(this.registry),
				Timer.builder(IdempotencyMeters.OUTBOX_LATENCY.meterName())
					.description("Time from an event's insert in the outbox to the broker's acknowledgment")
					.tag("topic", topic)
					.publishPercentileHistogram()
					.register(this.registry));
	}

	private record TopicMeters(Counter published, Timer latency) {
	}

	@Override
	public void failed(String topic, Throwable exception) {
		Counter.builder(IdempotencyMeters.OUTBOX_FAILURES.meterName())
			.description("Failed attempts to publish outbox events")
			.tag("topic", topic)
			.tag("exception", exception.getClass().getSimpleName())
			.register(this.registry)
			.increment();
	}

	@Override
	public void oldestPending(@Nullable Duration age) {
		this.oldest.set((age != null) ? new OldestPending(age.toNanos(), System.nanoTime()) : OldestPending.NONE);
	}

	@Override
	public void replicationLag(long bytes) {
		this.replicationLag.set(bytes);
		// registered with the first value: an application on the table relay has no slot
		if (this.replicationLagRegistered.compareAndSet(false, true)) {
			Gauge.builder(IdempotencyMeters.OUTBOX_REPLICATION_LAG.meterName(), this.replicationLag, AtomicLong::get)
				.description("WAL between the server's position and the replication relay's confirmed position")
				.baseUnit("bytes")
				.register(this.registry);
		}
	}

	@Override
	public void stats(OutboxStats stats) {
		this.stats.set(stats);
	}

	/**
	 * The age of the oldest pending event when it was read, and when that was: the gauge
	 * adds the time since, so that an event stuck between two reads keeps aging.
	 */
	private record OldestPending(long ageNanos, long readAtNanos) {

		static final OldestPending NONE = new OldestPending(-1, 0);

		double ageNow(long now) {
			return (this.ageNanos < 0) ? 0 : this.ageNanos + (now - this.readAtNanos);
		}

	}

}
