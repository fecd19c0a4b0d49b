/**
 * Exactly-once effects for Spring Kafka listeners: the {@link dev.idempotency.Idempotent}
 * annotation, the key resolution SPI and the public exceptions.
 */
@NullMarked
package dev.idempotency;

import org.jspecify.annotations.NullMarked;
