package dev.idempotency.reliability;

import javax.sql.DataSource;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The payment provider of the lease-mode listener: the store of its charges, in a schema
 * of its own ({@code provider}) and written on a connection of its own that commits at
 * once, outside every transaction of the starter, so that a crash of the caller cannot
 * undo a charge. A charge is not idempotent: every accepted call is one more row.
 * <p>
 * It is fenced, as the README's lease section asks of a downstream system: it keeps the
 * highest fencing token it has accepted per payment and accepts a call only with a token
 * greater than or equal to it; a call with a smaller token (a caller whose lease was taken
 * over) is rejected. Every call is recorded, accepted or not, in the store's order. Equal
 * tokens are accepted so that a second run under one claim shows as a second charge.
 * With fencing off (a negative control), every call is accepted.
 */
final class ChargeStore {

	static final String SCHEMA = """
			CREATE SCHEMA provider;
			CREATE TABLE provider.fences (payment_id BIGINT PRIMARY KEY, fencing_token BIGINT NOT NULL);
			CREATE TABLE provider.charges (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			    payment_id BIGINT NOT NULL, fencing_token BIGINT NOT NULL, amount BIGINT NOT NULL,
			    accepted BOOLEAN NOT NULL, worker TEXT NOT NULL,
			    called_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())""";

	// one statement: the fence moves and the call is recorded together, or neither
	private static final String CHARGE = """
			WITH fence AS (
			    INSERT INTO provider.fences (payment_id, fencing_token) VALUES (?, ?)
			    ON CONFLICT (payment_id) DO UPDATE SET fencing_token = EXCLUDED.fencing_token
			    WHERE %s
			    RETURNING payment_id)
			INSERT INTO provider.charges (payment_id, fencing_token, amount, accepted, worker)
			SELECT ?, ?, ?, EXISTS (SELECT 1 FROM fence), ?
			RETURNING accepted""";

	private final JdbcTemplate jdbc;

	private final String worker;

	private final String charge;

	ChargeStore(DataSource dataSource, String worker, boolean fenced) {
		this.jdbc = new JdbcTemplate(dataSource);
		this.worker = worker;
		this.charge = CHARGE.formatted(fenced ? "provider.fences.fencing_token <= EXCLUDED.fencing_token" : "true");
	}

	/**
	 * Return the highest fencing token the store accepted for a payment.
	 * @return the token, or {@link Long#MIN_VALUE} when the payment was never charged
	 */
	long highestToken(Payment payment) {
		return this.jdbc
			.query("SELECT fencing_token FROM provider.fences WHERE payment_id = ?",
					(rows) -> rows.next() ? rows.getLong(1) : Long.MIN_VALUE, payment.id());
	}

	/**
	 * Charge a payment, unless a caller with a larger fencing token charged it.
	 * @return whether the charge was accepted
	 */
	boolean charge(Payment payment, long fencingToken) {
		Boolean accepted = this.jdbc.queryForObject(this.charge, Boolean.class, payment.id(), fencingToken,
				payment.id(), fencingToken, payment.amount(), this.worker);
		return Boolean.TRUE.equals(accepted);
	}

}
