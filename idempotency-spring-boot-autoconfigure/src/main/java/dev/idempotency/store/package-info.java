/**
 * The processed-message store SPI and its JDBC (PostgreSQL) implementation.
 */
@NullMarked
package dev.idempotency.store;

import org.jspecify.annotations.NullMarked;
