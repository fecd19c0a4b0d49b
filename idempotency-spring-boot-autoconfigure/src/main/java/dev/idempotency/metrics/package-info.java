/**
 * Meter names and the recorder that writes them.
 */
@NullMarked
package dev.idempotency.metrics;

import org.jspecify.annotations.NullMarked;
