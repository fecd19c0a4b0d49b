package dev.idempotency.reliability;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the driver does in the database: the ledger's tables and the transfers it expects,
 * the observation of which process each relay runs in, the termination of the workload's
 * backends, and the size of the outbox.
 */
final class LedgerDatabase {

	private final String jdbcUrl;

	LedgerDatabase(String jdbcUrl) {
		this.jdbcUrl = jdbcUrl;
	}

	Map<String, List<String>> leasesByWorker() throws SQLException {
		try (Connection connection = connect();
				ResultSet owners = connection.createStatement().executeQuery("""
						SELECT DISTINCT r.worker, r.lease_owner FROM outbox_claims c
						JOIN relay_owners r ON r.lease_owner = c.lease_owner
						WHERE c.lease_until > now()""")) {
			Map<String, List<String>> result = new HashMap<>();
			while (owners.next()) {
				result.computeIfAbsent(owners.getString(1), (worker) -> new ArrayList<>()).add(owners.getString(2));
			}
			return result;
		}
	}

	/**
	 * Count the outbox events whose keys the given relays' claims hold.
	 */
	long leasedRows(List<String> owners) throws SQLException {
		try (Connection connection = connect();
				PreparedStatement statement = connection.prepareStatement("""
						SELECT count(*) FROM outbox o WHERE EXISTS (
						    SELECT 1 FROM outbox_claims c
						    WHERE c.lease_owner = ANY(?)
						      AND hashtext(coalesce(o.aggregate_id, o.id::text)) = ANY(c.key_hashes))""")) {
			statement.setArray(1, connection.createArrayOf("varchar", owners.toArray()));
			try (ResultSet count = statement.executeQuery()) {
				count.next();
				return count.getLong(1);
			}
		}
	}

	/**
	 * Record which process each relay runs in, from the database's side: the relay names
	 * itself only by a random lease owner, and each process's connections carry its name.
	 */
	void observeRelayOwners() throws Exception {
		long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			while (true) {
				try (ResultSet table = statement.executeQuery("SELECT to_regclass('outbox_claims') IS NOT NULL")) {
					table.next();
					if (table.getBoolean(1)) {
						break;
					}
				}
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("The workload did not create the outbox tables in 2 minutes");
				}
				Thread.sleep(200);
			}
			statement.execute("CREATE TABLE relay_owners (lease_owner VARCHAR(64) PRIMARY KEY, worker TEXT NOT NULL)");
			statement.execute("""
					CREATE FUNCTION record_relay_owner() RETURNS trigger LANGUAGE plpgsql AS $$
					BEGIN
					    INSERT INTO relay_owners
					    SELECT DISTINCT lease_owner, current_setting('application_name') FROM claimed
					    ON CONFLICT DO NOTHING;
					    RETURN NULL;
					END $$""");
			statement.execute("""
					CREATE TRIGGER record_relay_owner AFTER INSERT ON outbox_claims
					REFERENCING NEW TABLE AS claimed FOR EACH STATEMENT EXECUTE FUNCTION record_relay_owner()""");
		}
	}

	int terminateBackends() throws SQLException {
		try (Connection connection = connect();
				ResultSet terminated = connection.createStatement().executeQuery("""
						SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
						WHERE application_name LIKE 'worker-%' AND pid <> pg_backend_pid()""")) {
			terminated.next();
			return terminated.getInt(1);
		}
	}

	long outboxRows() {
		try (Connection connection = connect();
				ResultSet rows = connection.createStatement().executeQuery("SELECT count(*) FROM outbox")) {
			rows.next();
			return rows.getLong(1);
		}
		catch (SQLException ex) {
			// the starter creates the table when a workload process starts
			return -1;
		}
	}

	void createSchema(List<Transfer> transfers, int accounts) throws SQLException {
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			statement.execute("""
					CREATE TABLE accounts (id INT PRIMARY KEY, initial_balance BIGINT NOT NULL,
					    balance BIGINT NOT NULL, events BIGINT NOT NULL DEFAULT 0)""");
			statement.execute("""
					CREATE TABLE transfers_sent (id BIGINT PRIMARY KEY, from_account INT NOT NULL,
					    to_account INT NOT NULL, amount BIGINT NOT NULL)""");
			// one row per application of a transfer: no unique key, so that twice shows
			statement.execute("""
					CREATE TABLE transfer_effects (transfer_id BIGINT NOT NULL, event_id UUID NOT NULL,
					    account INT NOT NULL, seq BIGINT NOT NULL, worker TEXT NOT NULL,
					    applied_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())""");
			statement.execute(CrashWitness.SCHEMA);
			statement.execute("""
					INSERT INTO accounts (id, initial_balance, balance)
					SELECT id, 1000000, 1000000 FROM generate_series(0, %d) id""".formatted(accounts - 1));
			connection.setAutoCommit(false);
			try (PreparedStatement insert = connection.prepareStatement(
					"INSERT INTO transfers_sent (id, from_account, to_account, amount) VALUES (?, ?, ?, ?)")) {
				int batch = 0;
				for (Transfer transfer : transfers) {
					insert.setLong(1, transfer.id());
					insert.setInt(2, transfer.from());
					insert.setInt(3, transfer.to());
					insert.setLong(4, transfer.amount());
					insert.addBatch();
					if (++batch % 5000 == 0) {
						insert.executeBatch();
					}
				}
				insert.executeBatch();
			}
			connection.commit();
		}
	}

	/**
	 * Create the payment provider's store ({@link ChargeStore}) and the table of the
	 * payments sent, empty when the lease-mode listener does not run.
	 */
	void createPayments(List<Payment> payments) throws SQLException {
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			statement.execute(ChargeStore.SCHEMA);
			statement.execute("""
					CREATE TABLE payments_sent (id BIGINT PRIMARY KEY, account INT NOT NULL, amount BIGINT NOT NULL)""");
			connection.setAutoCommit(false);
			try (PreparedStatement insert = connection
				.prepareStatement("INSERT INTO payments_sent (id, account, amount) VALUES (?, ?, ?)")) {
				for (Payment payment : payments) {
					insert.setLong(1, payment.id());
					insert.setInt(2, payment.account());
					insert.setLong(3, payment.amount());
					insert.addBatch();
				}
				insert.executeBatch();
			}
			connection.commit();
		}
	}

	/**
	 * Create the table of the HTTP handler's effects and that of the requests sent, empty
	 * when the handler does not run.
	 */
	void createHttpRequests(List<Transfer> requests) throws SQLException {
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			// one row per application of a request: no unique key, so that twice shows
			statement.execute("""
					CREATE TABLE http_effects (request_id BIGINT NOT NULL, idempotency_key TEXT NOT NULL,
					    event_id UUID NOT NULL, account INT NOT NULL, seq BIGINT NOT NULL, worker TEXT NOT NULL,
					    applied_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())""");
			statement.execute("""
					CREATE TABLE http_requests_sent (id BIGINT PRIMARY KEY, from_account INT NOT NULL,
					    to_account INT NOT NULL, amount BIGINT NOT NULL)""");
			connection.setAutoCommit(false);
			try (PreparedStatement insert = connection.prepareStatement(
					"INSERT INTO http_requests_sent (id, from_account, to_account, amount) VALUES (?, ?, ?, ?)")) {
				for (Transfer request : requests) {
					insert.setLong(1, request.id());
					insert.setInt(2, request.from());
					insert.setInt(3, request.to());
					insert.setLong(4, request.amount());
					insert.addBatch();
				}
				insert.executeBatch();
			}
			connection.commit();
		}
	}

	private Connection connect() throws SQLException {
		return DriverManager.getConnection(this.jdbcUrl + "?reWriteBatchedInserts=true", "postgres",
				"postgres");
	}

}
