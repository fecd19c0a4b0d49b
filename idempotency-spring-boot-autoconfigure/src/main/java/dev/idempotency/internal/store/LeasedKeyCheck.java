package dev.idempotency.internal.store;

import dev.idempotency.IdempotencyKeyInProgressException;
import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.store.ProcessedMessage;
import java.sql.PreparedStatement;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Checks the keys a transactional claim found taken: a key held by a lease-mode claim of
 * the same scope is not a processed message, and the claim must not report it as a
 * duplicate.
 */
final class LeasedKeyCheck {

	private final JdbcTemplate jdbcTemplate;

	private final String leasedSql;

	LeasedKeyCheck(JdbcTemplate jdbcTemplate, ProcessedMessageStatements statements) {
		this.jdbcTemplate = jdbcTemplate;
		this.leasedSql = statements.leased();
	}

	/**
	 * Refuse to count as duplicates keys that a lease-mode claim of the same scope holds:
	 * one in progress may still be released (the record waits and is retried, as a
	 * lease-mode redelivery does), one marked failed goes to the recoverer, and one whose
	 * claim was released since the insert met it is retried.
	 */
	void requireNotLeased(String scope, List<ProcessedMessage> duplicates) {
		if (duplicates.isEmpty()) {
			return;
		}
		Map<String, ProcessedMessage> byKey = new LinkedHashMap<>();
		duplicates.forEach((message) -> byKey.putIfAbsent(message.key(), message));
		Map<String, String> leased = new HashMap<>();
		this.jdbcTemplate.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.leasedSql);
			statement.setArray(1, connection.createArrayOf("varchar", byKey.keySet().toArray()));
			statement.setString(2, scope);
			return statement;
		}, (row) -> {
			leased.put(row.getString(1), row.getString(2));
		});
		// the first in the batch: a batch listener applies the records before it
		for (ProcessedMessage message : byKey.values()) {
			String status = leased.get(message.key());
			if (status == null) {
				continue;
			}
			if ("FAILED".equals(status)) {
				throw new FailedLeaseKeyException("Key '" + message.key() + "' in scope '" + scope
						+ "' was marked FAILED by a lease-mode listener of the same scope (record "
						+ RecordCoordinates.describe(message) + "); delete its row to process it again", message);
			}
			if ("RELEASED".equals(status)) {
				throw new IdempotencyKeyInProgressException("Key '" + message.key() + "' in scope '" + scope
						+ "' was held by a lease-mode claim released while this claim was made (record "
						+ RecordCoordinates.describe(message) + "); retry");
			}
			throw new IdempotencyKeyInProgressException("Key '" + message.key() + "' in scope '" + scope
					+ "' is held by a lease-mode claim in progress (record " + RecordCoordinates.describe(message)
					+ "); retry later");
		}
	}

}
