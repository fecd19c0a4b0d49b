/**
 * Redis in front of the store (a write-through cache of processed keys) and Redis as the
 * store itself (atomic Lua claims with owner tokens and leases).
 */
@NullMarked
package dev.idempotency.cache;

import org.jspecify.annotations.NullMarked;
