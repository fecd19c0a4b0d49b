/**
 * Deduplication for Kafka Streams applications: a processor that forwards the first record
 * of each idempotency key within a window and drops the later ones, with its state store,
 * its RocksDB tuning and its auto-configuration.
 */
@NullMarked
package dev.idempotency.streams;

import org.jspecify.annotations.NullMarked;
