package dev.idempotency.internal.outbox;

import java.lang.reflect.Field;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.postgresql.PGConnection;
import org.postgresql.PGProperty;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.PGStream;
import org.postgresql.core.QueryExecutorBase;
import org.postgresql.core.ServerVersion;
import org.postgresql.replication.PGReplicationStream;
import org.postgresql.replication.ReplicationSlotInfo;
import org.postgresql.replication.fluent.logical.ChainedLogicalStreamBuilder;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Opens the replication connection of the replication relay, checks what the server must
 * offer (wal_level = logical, a role allowed to replicate), creates the publication of the
 * outbox table and the slot when they are missing, and starts the stream. The slot's
 * creation parks the pending events that its stream does not carry (see
 * {@link OutboxParking#parkUnstreamed(String)}).
 */
final class ReplicationConnector {

	private static final Log logger = LogFactory.getLog(OutboxReplicationRelay.class);

	/** The slot is streamed by another connection. */
	static final String OBJECT_IN_USE = "55006";

	private static final String DUPLICATE_OBJECT = "42710";

	private static final String UNIQUE_VIOLATION = "23505";

	private static final String INSUFFICIENT_PRIVILEGE = "42501";

	private static final String INVALID_AUTHORIZATION = "28000";

	private final ReplicationSettings settings;

	private final JdbcTemplate jdbc;

	private final OutboxParking parking;

	ReplicationConnector(ReplicationSettings settings, JdbcTemplate jdbc, OutboxParking parking) {
		this.settings = settings;
		this.jdbc = jdbc;
		this.parking = parking;
	}

	/**
	 * Open a replication connection and check that the server can stream the outbox.
	 * @return the connection
	 * @throws SQLException if the server cannot be reached
	 * @throws IllegalStateException if the server or the role cannot replicate: a
	 * configuration error, named with the property to change
	 */
	Connection connect() throws SQLException {
		Properties properties = new Properties();
		if (this.settings.username() != null) {
			PGProperty.USER.set(properties, this.settings.username());
		}
		if (this.settings.password() != null) {
			PGProperty.PASSWORD.set(properties, this.settings.password());
		}
		PGProperty.REPLICATION.set(properties, "database");
		PGProperty.ASSUME_MIN_SERVER_VERSION.set(properties, "10");
		PGProperty.PREFER_QUERY_MODE.set(properties, "simple");
		PGProperty.APPLICATION_NAME.set(properties, "idempotency-outbox-relay");
		PGProperty.TCP_KEEP_ALIVE.set(properties, true);
		PGProperty.CONNECT_TIMEOUT.set(properties, 10);
		Connection connection;
		try {
			connection = new org.postgresql.Driver().connect(this.settings.url(), properties);
		}
		catch (SQLException ex) {
			if (INSUFFICIENT_PRIVILEGE.equals(ex.getSQLState()) || INVALID_AUTHORIZATION.equals(ex.getSQLState())) {
				throw new IllegalStateException("idempotency.outbox.replication.enabled=true needs a replication "
						+ "connection, which the server refused: " + ex.getMessage() + ". The role of "
						+ this.settings.urlProperty() + " needs the REPLICATION attribute (ALTER ROLE ... REPLICATION; "
						+ "on a managed service its equivalent, such as the rds_replication role), and pg_hba.conf "
						+ "must allow its replication connections", ex);
			}
			throw ex;
		}
		if (connection == null) {
			throw new IllegalStateException("Not a PostgreSQL JDBC URL: " + this.settings.urlProperty() + "="
					+ this.settings.url());
		}
		try {
			String walLevel = walLevel(connection);
			if (!"logical".equals(walLevel)) {
				throw new IllegalStateException("idempotency.outbox.replication.enabled=true needs wal_level = "
						+ "logical on the server, which has wal_level = " + walLevel + " (set it in postgresql.conf, "
						+ "or the managed service's equivalent, and restart the server)");
			}
		}
		catch (SQLException | RuntimeException ex) {
			closeQuietly(connection);
			throw ex;
		}
		return connection;
	}

	private static String walLevel(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement();
				ResultSet result = statement.executeQuery("SHOW wal_level")) {
			result.next();
			return result.getString(1);
		}
	}

	/**
	 * Create the publication and the slot when they are missing (and allowed to).
	 * @param connection a replication connection
	 * @throws SQLException if the slot cannot be created
	 */
	void prepare(Connection connection) throws SQLException {
		if (!publicationExists()) {
			requireCreation("publication " + this.settings.publication());
			createPublication();
		}
		if (!slotExists()) {
			requireCreation("replication slot " + this.settings.slot());
			createSlot(connection);
		}
	}

	/**
	 * Start streaming the slot from its confirmed position.
	 * @param connection a replication connection
	 * @return the stream
	 * @throws SQLException if the slot is streamed elsewhere ({@link #OBJECT_IN_USE}), is
	 * invalidated, or the connection fails
	 */
	PGReplicationStream start(Connection connection) throws SQLException {
		checkSocketOnEveryRead(connection);
		ChainedLogicalStreamBuilder stream = connection.unwrap(PGConnection.class)
			.getReplicationAPI()
			.replicationStream()
			.logical()
			.withSlotName(this.settings.slot())
			.withSlotOption("proto_version", "1")
			.withSlotOption("publication_names", this.settings.publication());
		if (connection.unwrap(BaseConnection.class).haveMinimumServerVersion(ServerVersion.v14)) {
			// values in binary form: a payload as its bytes, not as hex (twice its size)
			stream = stream.withSlotOption("binary", "true");
		}
		return stream.withStatusInterval((int) this.settings.statusInterval().toMillis(), TimeUnit.MILLISECONDS)
			.start();
	}

	// The driver's non-blocking read (readPending) looks at the socket at most once a
	// second (PGStream's minStreamAvailableCheckDelay, 1000 ms, with no connection
	// property to set it): an event would wait up to a second after its commit. At 0 each
	// read that finds nothing buffered peeks at the socket for up to a millisecond.
	private static void checkSocketOnEveryRead(Connection connection) {
		try {
			Object executor = connection.unwrap(BaseConnection.class).getQueryExecutor();
			Field stream = QueryExecutorBase.class.getDeclaredField("pgStream");
			stream.setAccessible(true);
			((PGStream) stream.get(executor)).setMinStreamAvailableCheckDelay(0);
		}
		catch (ReflectiveOperationException | RuntimeException | SQLException ex) {
			logger.debug("Could not make the replication stream's reads look at the socket every time; events may "
					+ "wait up to a second after their commit: " + ex);
		}
	}

	private void requireCreation(String what) {
		if (!this.settings.createSlot()) {
			throw new IllegalStateException("The " + what + " does not exist, and "
					+ "idempotency.outbox.replication.create-slot=false: create it (see the README's replication relay "
					+ "section), or let the relay create it");
		}
	}

	private boolean publicationExists() {
		return !this.jdbc
			.queryForList("SELECT 1 FROM pg_publication WHERE pubname = ?", Integer.class, this.settings.publication())
			.isEmpty();
	}

	private boolean slotExists() {
		List<String> plugins = this.jdbc.queryForList(
				"SELECT plugin FROM pg_replication_slots WHERE slot_name = ?", String.class, this.settings.slot());
		if (!plugins.isEmpty() && !"pgoutput".equals(plugins.get(0))) {
			throw new IllegalStateException("The replication slot " + this.settings.slot() + " decodes with "
					+ plugins.get(0) + ", not pgoutput: set idempotency.outbox.replication.slot-name to a slot of "
					+ "the relay's own");
		}
		return !plugins.isEmpty();
	}

	private void createPublication() {
		try {
			// inserts only: the relay's own updates and deletes of the table are not streamed
			this.jdbc.execute("CREATE PUBLICATION " + this.settings.publication() + " FOR TABLE "
					+ this.settings.table().qualified() + " WITH (publish = 'insert')");
			logger.info("Created publication " + this.settings.publication() + " of the inserts into "
					+ this.settings.table().qualified());
		}
		catch (DataAccessException ex) {
			if (!isDuplicate(ex.getMostSpecificCause())) {
				throw ex;
			}
			// created by another instance meanwhile
		}
	}

	private void createSlot(Connection connection) throws SQLException {
		ReplicationSlotInfo slot;
		try {
			slot = connection.unwrap(PGConnection.class)
				.getReplicationAPI()
				.createReplicationSlot()
				.logical()
				.withSlotName(this.settings.slot())
				.withOutputPlugin("pgoutput")
				.make();
		}
		catch (SQLException ex) {
			if (isDuplicate(ex)) {
				// created by another instance meanwhile
				return;
			}
			throw ex;
		}
		String snapshot = slot.getSnapshotName();
		int parked = (snapshot != null) ? this.parking.parkUnstreamed(snapshot) : 0;
		logger.info("Created replication slot " + this.settings.slot() + " at " + slot.getConsistentPoint()
				+ ((parked > 0) ? "; " + parked + " events written before it are sent from the table" : ""));
	}

	private static boolean isDuplicate(Throwable ex) {
		return ex instanceof SQLException sql
				&& (DUPLICATE_OBJECT.equals(sql.getSQLState()) || UNIQUE_VIOLATION.equals(sql.getSQLState()));
	}

	static void closeQuietly(Connection connection) {
		try {
			connection.close();
		}
		catch (SQLException ex) {
			// closing a connection that failed
		}
	}

}
