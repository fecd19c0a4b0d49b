package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Waits until transactions read from the replication stream are visible to the other
 * sessions. PostgreSQL writes a commit to the WAL, where the stream reads it, before the
 * transaction leaves the list of running ones that snapshots are taken from: a moment
 * that is short, but long under load, and as long as a synchronous standby takes to answer
 * (the commit waits for it in between). An event streamed then may be sent, but its row
 * cannot be deleted or parked yet: the statement would not see it, and the row would stay
 * behind, or an event meant to be parked would be neither parked nor sent. So the relay
 * waits, before it completes or parks the events of a transaction, until a snapshot of
 * its own sees it.
 */
final class TransactionVisibility {

	private static final Log logger = LogFactory.getLog(OutboxReplicationRelay.class);

	private static final long WARN_AFTER = TimeUnit.SECONDS.toNanos(10);

	private static final long WARN_EVERY = TimeUnit.MINUTES.toNanos(1);

	private static final long MAX_POLL_MILLIS = 50;

	// txid_current_snapshot: PostgreSQL 10 and later (pg_current_snapshot from 13)
	private static final String SNAPSHOT = "SELECT txid_current_snapshot()::text";

	private final JdbcTemplate jdbc;

	TransactionVisibility(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	/**
	 * Wait until each transaction is visible to a new snapshot, polling at first every
	 * millisecond, then less often (up to every 50 ms) while the wait lasts.
	 * @param transactions the transaction ids, as the stream gives them (32 bits)
	 * @param pause waits between polls, keeping the stream alive (the server ends a
	 * replication connection that does not answer within {@code wal_sender_timeout})
	 * @return {@code true} once they are visible, {@code false} if the relay stopped first
	 */
	boolean await(Collection<Integer> transactions, ReplicationDelivery.Pause pause) {
		if (transactions.isEmpty()) {
			return true;
		}
		long started = System.nanoTime();
		long warnAt = started + WARN_AFTER;
		long poll = 1;
		while (true) {
			String snapshot = this.jdbc.queryForObject(SNAPSHOT, String.class);
			if (snapshot == null || allVisible(snapshot, transactions)) {
				return true;
			}
			if (System.nanoTime() - warnAt >= 0) {
				logger.warn("Transactions " + transactions + " are in the replication stream but not yet visible to "
						+ "other sessions after " + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started)
						+ " s (a commit waiting for a synchronous standby?); their outbox rows are completed once "
						+ "they are, and the slot's position waits behind them meanwhile");
				warnAt = System.nanoTime() + WARN_EVERY;
			}
			if (!pause.await(Duration.ofMillis(poll))) {
				return false;
			}
			poll = Math.min(MAX_POLL_MILLIS, poll * 2);
		}
	}

	/**
	 * Return whether a snapshot ({@code xmin:xmax:xip,...}, 64-bit transaction ids) sees
	 * every one of the transactions: one below its {@code xmin}, or below its {@code xmax}
	 * and not listed as running. A transaction that committed but is not visible yet is
	 * either listed, or at or above {@code xmax} (which moves only once it is visible).
	 */
	static boolean allVisible(String snapshot, Collection<Integer> transactions) {
		String[] parts = snapshot.split(":", -1);
		long xmin = Long.parseLong(parts[0]);
		long xmax = Long.parseLong(parts[1]);
		Set<Long> running = new HashSet<>();
		if (parts.length > 2 && !parts[2].isEmpty()) {
			for (String xid : parts[2].split(",")) {
				running.add(Long.parseLong(xid));
			}
		}
		for (int transaction : transactions) {
			long full = full(transaction, xmin);
			if (full >= xmin && (full >= xmax || running.contains(full))) {
				return false;
			}
		}
		return true;
	}

	// the 64-bit id of a 32-bit one: the transaction ids in use lie within 2^31 of each
	// other (PostgreSQL's wraparound limit), so it is the one nearest the reference
	static long full(int transaction, long reference) {
		return reference + (transaction - (int) reference);
	}

}
