/**
 * Internal: no compatibility promise.
 */
@NullMarked
package dev.idempotency.internal.outbox;

import org.jspecify.annotations.NullMarked;
