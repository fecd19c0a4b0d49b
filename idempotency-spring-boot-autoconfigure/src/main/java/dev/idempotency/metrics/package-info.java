/**
 * Meter and observation names, and the recorders that write them.
 */
@NullMarked
package dev.idempotency.metrics;

import org.jspecify.annotations.NullMarked;
