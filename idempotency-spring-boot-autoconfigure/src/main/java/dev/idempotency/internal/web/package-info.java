/**
 * {@code @Idempotent} Spring MVC handler methods: a servlet filter that claims the
 * request's {@code Idempotency-Key} in the processed-message store, runs the handler,
 * stores its response with the claim, and replays the stored response to a retried
 * request.
 *
 * <p>Internal: no compatibility promise.
 */
@NullMarked
package dev.idempotency.internal.web;

import org.jspecify.annotations.NullMarked;
