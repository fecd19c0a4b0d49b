/**
 * Auto-configuration of the idempotency starter and its configuration properties.
 */
@NullMarked
package dev.idempotency.autoconfigure;

import org.jspecify.annotations.NullMarked;
