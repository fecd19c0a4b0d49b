package dev.idempotency.test;

import java.util.List;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The business effects of a test application's listeners: one row per applied record,
 * written with the application's {@link JdbcTemplate}, so that it joins the claim's
 * transaction and commits or rolls back with it. An application started by
 * {@link TestApplications} has one, in the table named by
 * {@value TestApplications#EFFECTS_TABLE}, unless it declares its own bean; listeners get
 * it by extending {@link RecordingListener}. Count its rows.
 */
public final class TestEffects {

	private final JdbcTemplate jdbc;

	private final String table;

	/**
	 * Effects in a table of their own, created when missing.
	 * @param jdbc the application's template
	 * @param table the table name, a plain identifier
	 */
	public TestEffects(JdbcTemplate jdbc, String table) {
		if (!table.matches("[a-z_][a-z0-9_]*")) {
			throw new IllegalArgumentException("Not a plain table name: " + table);
		}
		this.jdbc = jdbc;
		this.table = table;
		jdbc.execute("CREATE TABLE IF NOT EXISTS " + table
				+ " (id BIGSERIAL PRIMARY KEY, listener TEXT NOT NULL, message_key TEXT NOT NULL)");
	}

	/**
	 * Write an effect, in the current transaction if there is one.
	 * @param listener which listener applied it
	 * @param key what it applied
	 */
	public void add(String listener, String key) {
		this.jdbc.update("INSERT INTO " + this.table + " (listener, message_key) VALUES (?, ?)", listener, key);
	}

	/**
	 * Count the effects of a key.
	 * @param listener the listener
	 * @param key the key
	 * @return how many times it was applied
	 */
	public int count(String listener, String key) {
		Integer count = this.jdbc.queryForObject(
				"SELECT count(*) FROM " + this.table + " WHERE listener = ? AND message_key = ?", Integer.class,
				listener, key);
		return (count != null) ? count : 0;
	}

	/**
	 * The keys a listener applied, in the order it applied them.
	 * @param listener the listener
	 * @return the keys
	 */
	public List<String> keys(String listener) {
		return this.jdbc.queryForList("SELECT message_key FROM " + this.table + " WHERE listener = ? ORDER BY id",
				String.class, listener);
	}

	/**
	 * Count the claims of a key in the processed-messages table.
	 * @param jdbc a template on the store's database
	 * @param group the consumer group (scope)
	 * @param key the key
	 * @return 1 when claimed, else 0
	 */
	public static int processedKeys(JdbcTemplate jdbc, String group, String key) {
		Integer count = jdbc.queryForObject(
				"SELECT count(*) FROM processed_messages WHERE consumer_group = ? AND idempotency_key = ?",
				Integer.class, group, key);
		return (count != null) ? count : 0;
	}

	/**
	 * The status of a key's claim in the processed-messages table.
	 * @param jdbc a template on the store's database
	 * @param group the consumer group (scope)
	 * @param key the key
	 * @return its status, such as {@code COMPLETED}, or {@code null} when not claimed
	 */
	public static String status(JdbcTemplate jdbc, String group, String key) {
		List<String> status = jdbc.queryForList(
				"SELECT status FROM processed_messages WHERE consumer_group = ? AND idempotency_key = ?", String.class,
				group, key);
		return status.isEmpty() ? null : status.get(0);
	}

}
