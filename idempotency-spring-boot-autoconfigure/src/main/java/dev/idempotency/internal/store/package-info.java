/**
 * Internal: no compatibility promise.
 */
@NullMarked
package dev.idempotency.internal.store;

import org.jspecify.annotations.NullMarked;
