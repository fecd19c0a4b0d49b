package dev.idempotency.reliability;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

import javax.sql.DataSource;

/**
 * A payment provider, as the checkout's lease-mode handler calls it: an effect outside
 * the starter's transactions, made in a connection of its own that commits at once, so
 * that a crash of the caller cannot undo it. It logs every call, and keeps one charge per
 * idempotency key, fenced: a call whose fencing token is below the highest it has seen
 * for the key is rejected, so that a stale caller (one whose lease was taken over) cannot
 * overwrite the charge of the caller that holds the key now.
 */
final class PaymentProvider {

	static final String SCHEMA = """
			CREATE TABLE provider_calls (idempotency_key TEXT NOT NULL, fencing_token BIGINT NOT NULL,
			    amount BIGINT NOT NULL, accepted BOOLEAN NOT NULL, pid BIGINT NOT NULL,
			    called_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp());
			CREATE TABLE provider_charges (idempotency_key TEXT PRIMARY KEY, fencing_token BIGINT NOT NULL,
			    amount BIGINT NOT NULL)""";

	private static final String CHARGE = """
			INSERT INTO provider_charges (idempotency_key, fencing_token, amount) VALUES (?, ?, ?)
			ON CONFLICT (idempotency_key) DO UPDATE SET fencing_token = EXCLUDED.fencing_token, amount = EXCLUDED.amount
			WHERE provider_charges.fencing_token < EXCLUDED.fencing_token""";

	private static final String CALL = """
			INSERT INTO provider_calls (idempotency_key, fencing_token, amount, accepted, pid)
			VALUES (?, ?, ?, ?, ?)""";

	private final DataSource dataSource;

	PaymentProvider(DataSource dataSource) {
		this.dataSource = dataSource;
	}

	/**
	 * Charge an amount for a key, unless a caller with a larger fencing token charged it.
	 * @return whether the charge was accepted
	 */
	boolean charge(String key, long fencingToken, long amount) throws SQLException {
		try (Connection connection = this.dataSource.getConnection()) {
			connection.setAutoCommit(true);
			boolean accepted;
			try (PreparedStatement charge = connection.prepareStatement(CHARGE)) {
				charge.setString(1, key);
				charge.setLong(2, fencingToken);
				charge.setLong(3, amount);
				accepted = charge.executeUpdate() == 1;
			}
			try (PreparedStatement call = connection.prepareStatement(CALL)) {
				call.setString(1, key);
				call.setLong(2, fencingToken);
				call.setLong(3, amount);
				call.setBoolean(4, accepted);
				call.setLong(5, ProcessHandle.current().pid());
				call.executeUpdate();
			}
			return accepted;
		}
	}

}
