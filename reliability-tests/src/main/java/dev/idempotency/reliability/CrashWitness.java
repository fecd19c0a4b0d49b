package dev.idempotency.reliability;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What a crash of PostgreSQL must not lose, taken just before the crash and checked once
 * the server has recovered: every effect of the ledger committed before it (each
 * application of a transfer commits its claim, its effect and its outbox row together),
 * and one commit of its own acknowledged last before the crash, the witness.
 */
final class CrashWitness {

	static final String SCHEMA = """
			CREATE TABLE crash_witness (crash INT PRIMARY KEY,
			    committed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())""";

	private final String jdbcUrl;

	private final int crash;

	private Set<String> effects = Set.of();

	/**
	 * @param jdbcUrl the database
	 * @param crash the crash's number in the run, from 1
	 */
	CrashWitness(String jdbcUrl, int crash) {
		this.jdbcUrl = jdbcUrl;
		this.crash = crash;
	}

	/**
	 * Read the effects committed so far, then commit the witness; the crash should follow
	 * at once.
	 */
	void commitBeforeCrash() throws SQLException {
		try (Connection connection = connect()) {
			this.effects = effects(connection);
			try (PreparedStatement witness = connection
				.prepareStatement("INSERT INTO crash_witness (crash) VALUES (?)")) {
				witness.setInt(1, this.crash);
				witness.executeUpdate();
			}
		}
	}

	/** How many effects were committed before the crash. */
	int effectsBeforeCrash() {
		return this.effects.size();
	}

	/**
	 * What the recovered database lost of what was committed before the crash: one
	 * sentence per loss, none when nothing was lost.
	 */
	List<String> lostAfterRecovery() throws SQLException {
		List<String> lost = new ArrayList<>();
		try (Connection connection = connect()) {
			Set<String> missing = new HashSet<>(this.effects);
			missing.removeAll(effects(connection));
			if (!missing.isEmpty()) {
				lost.add(missing.size() + " of the " + this.effects.size()
						+ " effects committed before PostgreSQL crash " + this.crash + " missing after its recovery");
			}
			try (PreparedStatement witness = connection
				.prepareStatement("SELECT count(*) FROM crash_witness WHERE crash = ?")) {
				witness.setInt(1, this.crash);
				try (ResultSet count = witness.executeQuery()) {
					count.next();
					if (count.getLong(1) != 1) {
						lost.add("the commit acknowledged just before PostgreSQL crash " + this.crash
								+ " missing after its recovery");
					}
				}
			}
		}
		return lost;
	}

	private static Set<String> effects(Connection connection) throws SQLException {
		Set<String> effects = new HashSet<>();
		try (ResultSet rows = connection.createStatement().executeQuery("SELECT event_id FROM transfer_effects")) {
			while (rows.next()) {
				effects.add(rows.getString(1));
			}
		}
		return effects;
	}

	private Connection connect() throws SQLException {
		return DriverManager.getConnection(this.jdbcUrl, "postgres", "postgres");
	}

}
