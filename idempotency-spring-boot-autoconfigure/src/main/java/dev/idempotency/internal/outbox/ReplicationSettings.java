package dev.idempotency.internal.outbox;

import java.time.Duration;

import dev.idempotency.internal.store.TableName;
import org.jspecify.annotations.Nullable;

/**
 * How the replication relay reads the stream.
 *
 * @param table the outbox table, validated
 * @param slot the logical replication slot
 * @param publication the publication of the outbox table's inserts
 * @param url the JDBC URL of the replication connection
 * @param username its user, or {@code null} for the driver's default
 * @param password its password, or {@code null} for none
 * @param createSlot whether to create the publication and the slot when missing
 * @param standbyRetryInterval how often an instance that is not the active reader tries
 * to take the slot over
 * @param statusInterval how often the relay reports its position to the server
 * @param urlProperty the property to name in errors about the replication connection
 */
public record ReplicationSettings(TableName table, String slot, String publication, String url,
		@Nullable String username, @Nullable String password, boolean createSlot, Duration standbyRetryInterval,
		Duration statusInterval, String urlProperty) {
}
