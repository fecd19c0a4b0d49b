/**
 * Resolution of idempotency keys from Kafka records: header, SpEL expression, record
 * coordinates, and the normalization of keys to what the store can hold.
 */
@NullMarked
package dev.idempotency.key;

import org.jspecify.annotations.NullMarked;
