package dev.idempotency.test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

import javax.sql.DataSource;

/**
 * Another consumer's claim of a key, in a transaction that stays open until it is given
 * up: claims of the key wait for it, then give up after their lock timeout.
 */
public final class HeldKey implements AutoCloseable {

	private final Connection connection;

	private HeldKey(Connection connection) {
		this.connection = connection;
	}

	/**
	 * Claim a key in the {@code processed_messages} table and keep the claim open.
	 * @param dataSource the database
	 * @param scope the scope (consumer group)
	 * @param key the key
	 * @return the open claim
	 * @throws SQLException if the claim fails
	 */
	public static HeldKey hold(DataSource dataSource, String scope, String key) throws SQLException {
		Connection connection = dataSource.getConnection();
		connection.setAutoCommit(false);
		try (PreparedStatement insert = connection
			.prepareStatement("INSERT INTO processed_messages (consumer_group, idempotency_key) VALUES (?, ?)")) {
			insert.setString(1, scope);
			insert.setString(2, key);
			insert.executeUpdate();
		}
		return new HeldKey(connection);
	}

	/**
	 * Give the claim up, as a consumer whose work failed: its transaction rolls back.
	 * @throws SQLException if the rollback fails
	 */
	@Override
	public void close() throws SQLException {
		try {
			this.connection.rollback();
		}
		finally {
			this.connection.close();
		}
	}

}
