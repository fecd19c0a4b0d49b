/**
 * The interception of {@code @Idempotent} listener methods: the advisor and interceptor,
 * the binding of the record being delivered to the consumer thread, and the start-up
 * checks of annotated methods.
 *
 * <p>Internal: no compatibility promise.
 */
@NullMarked
package dev.idempotency.internal.consumer;

import org.jspecify.annotations.NullMarked;
