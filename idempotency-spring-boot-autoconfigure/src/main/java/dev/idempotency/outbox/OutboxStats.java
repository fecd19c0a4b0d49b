package dev.idempotency.outbox;

import java.time.Instant;

import org.jspecify.annotations.Nullable;

/**
 * A snapshot of the outbox table.
 *
 * @param pending the number of events waiting to be published
 * @param dead the number of events that failed every attempt
 * @param oldest when the oldest pending event was written, or {@code null} when none is
 * pending
 */
public record OutboxStats(long pending, long dead, @Nullable Instant oldest) {

}
