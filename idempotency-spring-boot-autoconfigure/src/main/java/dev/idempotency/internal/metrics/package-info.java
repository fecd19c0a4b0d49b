/**
 * Internal: no compatibility promise.
 */
@NullMarked
package dev.idempotency.internal.metrics;

import org.jspecify.annotations.NullMarked;
