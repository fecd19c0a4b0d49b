/**
 * Internal: no compatibility promise.
 */
@NullMarked
package dev.idempotency.internal.cache;

import org.jspecify.annotations.NullMarked;
