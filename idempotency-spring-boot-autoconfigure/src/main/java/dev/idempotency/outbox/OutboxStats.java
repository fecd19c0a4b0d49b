package dev.idempotency.outbox;

import java.time.Instant;

import org.jspecify.annotations.Nullable;

/**
 * A snapshot of the outbox table. The starter's snapshots count each status up to 10,000
 * events, so that taking one costs the same whatever the backlog: a larger number reads
 * 10,001, "more than 10,000".
 *
 * @param pending the number of events waiting to be published, counted up to a bound
 * @param dead the number of events that failed every attempt, counted up to a bound
 * @param oldest when the oldest pending event was written, or {@code null} when none is
 * pending
 */
public record OutboxStats(long pending, long dead, @Nullable Instant oldest) {

}
