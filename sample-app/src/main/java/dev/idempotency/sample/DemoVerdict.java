package dev.idempotency.sample;

import java.io.PrintStream;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * What the demo saw once everything drained, and whether exactly-once held.
 *
 * @param payments payments requested over HTTP
 * @param paymentsCreated payments the database holds for this run
 * @param httpRetries requests sent again with the same {@code Idempotency-Key}
 * @param httpRetriesAnsweredDifferently retries answered with another payment than the
 * first request
 * @param resentEvents {@code PaymentRequested} events sent a second time, as a relay or
 * producer retry does
 * @param replayedRecords payment records delivered again by the consumer replay
 * @param redisOutage whether Redis was stopped during the run
 * @param expectedBalances opening balance minus the payments, per account
 * @param actualBalances balance per account
 * @param paymentsWithoutOneLedgerEntry payments with 0 or more than 1 ledger entry
 * @param paymentsWithoutOneStatementLine payments with 0 or more than 1 statement line
 * @param duplicatesFromCache duplicates the payments listener skipped on a Redis hit
 * @param duplicatesFromStore duplicates the payments listener skipped on the claim in
 * PostgreSQL
 * @param eventsPublished events the outbox relay published
 * @param drained whether everything drained before the timeout
 * @param took how long the demo took
 * @param meters the starter's meters, by name and tags
 */
record DemoVerdict(int payments, long paymentsCreated, int httpRetries, int httpRetriesAnsweredDifferently,
		int resentEvents, long replayedRecords, boolean redisOutage, Map<String, BigDecimal> expectedBalances,
		Map<String, BigDecimal> actualBalances, long paymentsWithoutOneLedgerEntry,
		long paymentsWithoutOneStatementLine, double duplicatesFromCache, double duplicatesFromStore,
		double eventsPublished, boolean drained, Duration took, List<String> meters) {

	/**
	 * Whether every payment applied exactly once and every injected duplicate was skipped.
	 * @return whether the verdict holds
	 */
	boolean holds() {
		return drained && paymentsCreated == payments && httpRetriesAnsweredDifferently == 0
				&& balancesMatch() && paymentsWithoutOneLedgerEntry == 0 && paymentsWithoutOneStatementLine == 0
				&& duplicatesFromCache + duplicatesFromStore >= resentEvents + replayedRecords
				&& eventsPublished >= 2.0 * payments;
	}

	boolean balancesMatch() {
		return expectedBalances.keySet().equals(actualBalances.keySet()) && expectedBalances.entrySet()
			.stream()
			.allMatch((entry) -> entry.getValue().compareTo(actualBalances.get(entry.getKey())) == 0);
	}

	void print(PrintStream out) {
		out.println();
		out.println("=== Exactly-once demo: " + (holds() ? "PASSED" : "FAILED") + " ===");
		out.printf("payments requested over HTTP     %d (created: %d)%n", payments, paymentsCreated);
		out.printf("HTTP retries, same key           %d (answered with another payment: %d)%n", httpRetries,
				httpRetriesAnsweredDifferently);
		out.printf("events sent twice (relay retry)  %d%n", resentEvents);
		out.printf("records replayed (offset reset)  %d%n", replayedRecords);
		out.printf("Redis stopped for a while        %s%n", redisOutage ? "yes" : "no (not embedded)");
		out.printf("balances                         %s%n", balancesMatch() ? "as expected" : "WRONG");
		expectedBalances.forEach((account, expected) -> out.printf("  %-8s expected %15s  actual %15s%n", account,
				expected, actualBalances.get(account)));
		out.printf("payments without 1 ledger entry  %d%n", paymentsWithoutOneLedgerEntry);
		out.printf("payments without 1 statement line %d%n", paymentsWithoutOneStatementLine);
		out.printf("duplicates skipped               %.0f by the Redis cache, %.0f by the store%n",
				duplicatesFromCache, duplicatesFromStore);
		out.printf("events published by the outbox   %.0f%n", eventsPublished);
		out.printf("drained                          %s%n", drained ? "yes" : "NO (timed out)");
		out.printf("time taken                       %.1f s%n", took.toMillis() / 1000.0);
		out.println("starter meters:");
		meters.forEach((meter) -> out.println("  " + meter));
		out.println();
	}

}
