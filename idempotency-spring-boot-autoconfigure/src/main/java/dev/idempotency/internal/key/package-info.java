/**
 * Resolution of idempotency keys from Kafka records: header, SpEL expression, record
 * coordinates, and the normalization of keys to what the store can hold.
 *
 * <p>Internal: no compatibility promise.
 */
@NullMarked
package dev.idempotency.internal.key;

import org.jspecify.annotations.NullMarked;
