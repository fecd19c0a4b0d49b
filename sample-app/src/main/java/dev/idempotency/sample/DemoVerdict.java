package dev.idempotency.sample;

import java.io.PrintStream;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * What the demo saw once everything drained, and whether exactly-once held.
 *
 * @param http what the HTTP clients sent and got
 * @param ledger what the database and the {@code payment-rejected} topic hold for the
 * run's payments
 * @param redeliveries the duplicate events injected, and those the ledger skipped
 * @param drained whether everything drained before the timeout
 * @param took how long the demo took
 * @param gaugesFresh whether the outbox gauges caught up with the table before the meters
 * were read
 * @param meters the starter's meters, by name and tags
 */
record DemoVerdict(Http http, Ledger ledger, Redeliveries redeliveries, boolean drained, Duration took,
		boolean gaugesFresh, List<String> meters) {

	/**
	 * Whether every payment was created once per key and applied exactly once (booked, or
	 * refused as an overdraft), and every injected duplicate was skipped.
	 * @return whether the verdict holds
	 */
	boolean holds() {
		return drained && http.holds() && ledger.holds(http) && redeliveries.holds();
	}

	void print(PrintStream out) {
		out.println();
		out.println("=== Exactly-once demo: " + (holds() ? "PASSED" : "FAILED") + " ===");
		out.printf("payments requested over HTTP     %d (created: %d; booked: %d, rejected: %d)%n", http.payments,
				ledger.created, ledger.booked, ledger.rejected);
		out.printf("overdrafts among them            %d (decided otherwise: %d)%n", http.overdrafts,
				ledger.decidedOtherwise);
		out.printf("HTTP retries, same key           %d (answered with another payment: %d, Idempotent-Replayed "
				+ "wrong: %d, replayed by the starter: %.0f)%n", http.retries, http.answeredDifferently,
				http.wronglyMarked, http.replayedByStarter);
		out.printf("events sent twice (relay retry)  %d%n", redeliveries.resentEvents);
		out.printf("records replayed (offset reset)  %d%n", redeliveries.replayedRecords);
		out.printf("Redis stopped for a while        %s%n", redeliveries.redisOutage ? "yes" : "no (not embedded)");
		out.printf("balances                         %s%n", ledger.balancesMatch() ? "as expected" : "WRONG");
		ledger.expectedBalances.forEach((account, expected) -> out.printf("  %-8s expected %15s  actual %15s%n",
				account, expected, ledger.actualBalances.get(account)));
		out.printf("ledger entries per payment       wrong for %d (1 if booked, 0 if rejected)%n",
				ledger.withoutTheirLedgerEntry);
		out.printf("statement lines per payment      wrong for %d (1 if booked, 0 if rejected)%n",
				ledger.withoutTheirStatementLine);
		out.printf("PaymentRejected per payment      wrong for %d (1 if rejected, 0 if booked)%n",
				ledger.withoutTheirRejectionEvent);
		out.printf("duplicates skipped               %.0f by the Redis cache, %.0f by the store%n",
				redeliveries.duplicatesFromCache, redeliveries.duplicatesFromStore);
		out.printf("events published by the outbox   %.0f%n", ledger.eventsPublished);
		out.printf("drained                          %s%n", drained ? "yes" : "NO (timed out)");
		out.printf("time taken                       %.1f s%n", took.toMillis() / 1000.0);
		out.println("starter meters" + (gaugesFresh ? " (the outbox gauges as the table is now):"
				: " (the outbox gauges did not catch up with the table):"));
		meters.forEach((meter) -> out.println("  " + meter));
		out.println();
	}

	/**
	 * What the HTTP clients sent and got.
	 *
	 * @param payments payments requested, one key each
	 * @param overdrafts payments requested for more than their account ever held
	 * @param retries requests sent again with the same {@code Idempotency-Key}
	 * @param answeredDifferently retries answered otherwise than the first request, byte for
	 * byte
	 * @param wronglyMarked first answers marked {@code Idempotent-Replayed}, and replays not
	 * marked {@code Idempotent-Replayed: true}
	 * @param replayedByStarter requests the starter answered with a stored response
	 */
	record Http(int payments, int overdrafts, int retries, int answeredDifferently, int wronglyMarked,
			double replayedByStarter) {

		boolean holds() {
			return answeredDifferently == 0 && wronglyMarked == 0 && replayedByStarter >= retries;
		}

	}

	/**
	 * What the database and the {@code payment-rejected} topic hold for the run's payments.
	 *
	 * @param created payments the database holds for the run
	 * @param booked payments booked
	 * @param rejected payments rejected
	 * @param decidedOtherwise overdrafts booked and other payments rejected
	 * @param expectedBalances opening balance minus the payments not rejected, per account
	 * @param actualBalances balance per account
	 * @param withoutTheirLedgerEntry booked payments without exactly 1 ledger entry, and
	 * rejected ones with any
	 * @param withoutTheirStatementLine booked payments without exactly 1 statement line, and
	 * rejected ones with any
	 * @param withoutTheirRejectionEvent rejected payments without exactly 1
	 * {@code PaymentRejected} event (by event id), and booked ones with any
	 * @param eventsPublished events the outbox relay published
	 */
	record Ledger(long created, long booked, long rejected, long decidedOtherwise,
			Map<String, BigDecimal> expectedBalances, Map<String, BigDecimal> actualBalances,
			long withoutTheirLedgerEntry, long withoutTheirStatementLine, long withoutTheirRejectionEvent,
			double eventsPublished) {

		boolean holds(Http http) {
			return created == http.payments && booked + rejected == created && rejected == http.overdrafts
					&& decidedOtherwise == 0 && balancesMatch() && withoutTheirLedgerEntry == 0
					&& withoutTheirStatementLine == 0 && withoutTheirRejectionEvent == 0
					&& eventsPublished >= 2.0 * http.payments;
		}

		boolean balancesMatch() {
			return expectedBalances.keySet().equals(actualBalances.keySet()) && expectedBalances.entrySet()
				.stream()
				.allMatch((entry) -> entry.getValue().compareTo(actualBalances.get(entry.getKey())) == 0);
		}

	}

	/**
	 * The duplicate payment events injected, and those the ledger skipped.
	 *
	 * @param resentEvents {@code PaymentRequested} events sent a second time, as a relay or
	 * producer retry does
	 * @param replayedRecords payment records delivered again by the consumer replay
	 * @param redisOutage whether Redis was stopped during the run
	 * @param duplicatesFromCache duplicates the payments listener skipped on a Redis hit
	 * @param duplicatesFromStore duplicates the payments listener skipped on the claim in
	 * PostgreSQL
	 */
	record Redeliveries(int resentEvents, long replayedRecords, boolean redisOutage, double duplicatesFromCache,
			double duplicatesFromStore) {

		boolean holds() {
			return duplicatesFromCache + duplicatesFromStore >= resentEvents + replayedRecords;
		}

	}

}
