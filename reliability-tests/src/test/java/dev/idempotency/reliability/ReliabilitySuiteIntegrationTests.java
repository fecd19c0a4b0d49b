package dev.idempotency.reliability;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reliability suite at the size the build runs: the workload as three processes
 * under every kind of fault, and the negative control, which the checker must catch, in
 * each of the workload's listeners and in its HTTP handler. The full size is
 * {@code reliability-tests/run.sh --size=full}.
 */
class ReliabilitySuiteIntegrationTests {

	// the same faults at the same moments in every build; -Dreliability.seed=N tries others
	private static final long DEFAULT_SEED = 20261127L;

	private static final Path WORK = Path.of(System.getProperty("reliability.work-dir", "target/reliability"));

	@Test
	void everyTransferIsAppliedOnceAndEveryEventPublishedInOrderUnderFaults() throws Exception {
		long seed = Long.getLong("reliability.seed", DEFAULT_SEED);
		Checker.Verdict verdict = new FaultDriver(RunOptions.ci(seed, WORK)).run();
		assertThat(verdict.violations()).as("violations of the run with seed %d", seed).isEmpty();
		assertThat(verdict.appliedOnce()).isEqualTo(verdict.events()).isEqualTo(5_000);
		assertThat(verdict.duplicatesInjected()).isPositive();
		assertThat(verdict.kills()).isEqualTo(3);
		assertThat(verdict.redisRestarts()).isEqualTo(1);
		assertThat(verdict.redisOutageSeconds()).isPositive();
		assertThat(verdict.dbKills()).isEqualTo(1);
		assertThat(verdict.pgCrashes()).isEqualTo(1);
		// latency, connections reset, a black hole and a half-open connection, each of which
		// delayed, reset or held back some of the workload's traffic
		assertThat(verdict.networkFaults()).isEqualTo(4);
		assertThat(verdict.batchAppliedOnce()).isEqualTo(1_000);
		assertThat(verdict.lease().payments()).isEqualTo(1_000);
		assertThat(verdict.lease().appliedOnce() + verdict.lease().reruns()).isEqualTo(1_000);
		// responses dropped after the handler committed, the requests retried with their keys
		assertThat(verdict.http().requests()).isEqualTo(250);
		assertThat(verdict.http().appliedOnce()).isEqualTo(250);
		assertThat(verdict.http().applications()).isEqualTo(250);
		assertThat(verdict.http().droppedResponses()).isPositive();
		assertThat(verdict.http().retries()).isGreaterThanOrEqualTo(verdict.http().droppedResponses());
		assertThat(verdict.http().unanswered()).isZero();
	}

	@Test
	void theCheckerCatchesTheListenerWithoutIdempotent() throws Exception {
		Checker.Verdict verdict = new FaultDriver(RunOptions.control(42, WORK)).run();
		assertThat(verdict.passed()).isFalse();
		// every duplicate applied again: transfers, in batches too, and payments
		assertThat(verdict.appliedTwice()).isPositive();
		assertThat(verdict.batchAppliedTwice()).isPositive();
		assertThat(verdict.lease().appliedTwice()).isPositive();
		assertThat(verdict.appliedTwice() + verdict.lease().appliedTwice()).isEqualTo(verdict.duplicatesInjected());
		assertThat(verdict.lost()).isZero();
		assertThat(verdict.lease().lost()).isZero();
		assertThat(verdict.pgCrashes()).isZero();
		assertThat(verdict.redisOutageSeconds()).isZero();
		assertThat(verdict.networkFaults()).isZero();
		// the handler without @Idempotent applies a request again for each response dropped
		// after its commit (the proxy drops a response only once the handler answered), and
		// for each attempt that timed out on a slow machine and still committed
		assertThat(verdict.http().appliedTwice()).isPositive();
		assertThat(verdict.http().lost()).isZero();
		assertThat(verdict.http().applications() - verdict.http().requests())
			.isGreaterThanOrEqualTo(verdict.http().droppedResponses());
		assertThat(verdict.http().unanswered()).isZero();
	}

}
