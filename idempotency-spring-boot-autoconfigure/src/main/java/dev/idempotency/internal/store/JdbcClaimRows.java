package dev.idempotency.internal.store;

import java.util.List;

import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The payload fingerprints and stored results of the transactional mode on the
 * {@link JdbcProcessedMessageStore}'s table. Each statement runs in the listener's
 * transaction, so that what it writes commits or rolls back with the claim and the
 * listener's work, and what it reads is the row the claim found.
 */
public final class JdbcClaimRows {

	private static final String READ = """
			SELECT fingerprint, result::text FROM %s WHERE consumer_group = ? AND idempotency_key = ?
			""";

	private static final String COMPLETED = """
			SELECT fingerprint, result::text FROM %s WHERE consumer_group = ? AND idempotency_key = ?
			AND result IS NOT NULL AND (status IS NULL OR status = 'COMPLETED')
			""";

	private static final String STORE_RESULT = """
			UPDATE %s SET result = CAST(? AS jsonb) WHERE consumer_group = ? AND idempotency_key = ?
			""";

	private final JdbcProcessedMessageStore store;

	private final JdbcTemplate jdbcTemplate;

	private final String readSql;

	private final String storeResultSql;

	private final String completedSql;

	JdbcClaimRows(JdbcProcessedMessageStore store, JdbcTemplate jdbcTemplate, TableName table) {
		this.store = store;
		this.jdbcTemplate = jdbcTemplate;
		this.readSql = READ.formatted(table.qualified());
		this.storeResultSql = STORE_RESULT.formatted(table.qualified());
		this.completedSql = COMPLETED.formatted(table.qualified());
	}

	/**
	 * Claim a key as {@link JdbcProcessedMessageStore#claim} does, with the payload's
	 * fingerprint in the inserted row.
	 * @param message the message to claim
	 * @param fingerprint the fingerprint, or {@code null} for none
	 * @return whether the key was new
	 */
	public Claim claim(ProcessedMessage message, @Nullable String fingerprint) {
		return this.store.claim(message, fingerprint);
	}

	/**
	 * Read the fingerprint and the stored result of a claimed key.
	 * @param message the message whose key was claimed
	 * @return the row, or {@code null} if it is gone (deleted by retention since the claim)
	 */
	public @Nullable Row read(ProcessedMessage message) {
		this.store.requireTransaction();
		List<Row> rows = this.jdbcTemplate.query(this.readSql,
				(row, rowNum) -> new Row(row.getString(1), row.getString(2)), message.scope(), message.key());
		return rows.isEmpty() ? null : rows.get(0);
	}

	/**
	 * Read the fingerprint and the stored result of a key whose claim committed with a
	 * result, in either mode, outside any transaction: such a row no longer changes, so a
	 * retry can be answered from it without a claim.
	 * @param message the message whose key to read
	 * @return the row, or {@code null} if the key has no committed result
	 */
	public @Nullable Row readCompleted(ProcessedMessage message) {
		List<Row> rows = this.jdbcTemplate.query(this.completedSql,
				(row, rowNum) -> new Row(row.getString(1), row.getString(2)), message.scope(), message.key());
		return rows.isEmpty() ? null : rows.get(0);
	}

	/**
	 * Store the JSON result of the listener with the key it claimed in this transaction.
	 * @param message the message whose key was claimed
	 * @param json the result as JSON
	 * @throws IllegalStateException if the claim's row is not there
	 */
	public void storeResult(ProcessedMessage message, String json) {
		this.store.requireTransaction();
		int updated = this.jdbcTemplate.update(this.storeResultSql, json, message.scope(), message.key());
		if (updated != 1) {
			throw new IllegalStateException("The claim of key in scope '" + message.scope() + "' was not found in "
					+ "this transaction to store its result");
		}
	}

	/**
	 * What a claimed row holds besides its key.
	 * @param fingerprint the payload fingerprint, or {@code null} if the claim stored none
	 * @param result the stored result as JSON, or {@code null}
	 */
	public record Row(@Nullable String fingerprint, @Nullable String result) {
	}

}
