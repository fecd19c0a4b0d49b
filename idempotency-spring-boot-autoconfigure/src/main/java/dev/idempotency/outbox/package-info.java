/**
 * The transactional outbox: {@link dev.idempotency.outbox.Outbox} writes events in the
 * caller's transaction, and the relay publishes them to Kafka in order per key.
 */
@NullMarked
package dev.idempotency.outbox;

import org.jspecify.annotations.NullMarked;
