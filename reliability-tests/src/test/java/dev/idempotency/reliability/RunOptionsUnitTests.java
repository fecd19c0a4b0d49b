package dev.idempotency.reliability;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The workload's listeners and HTTP handler as {@code --modes} selects them, and how the
 * summary line names them.
 */
class RunOptionsUnitTests {

	@Test
	void everySizeRunsAllThreeListenersAndTheHttpHandlerByDefault() {
		for (String size : new String[] { "ci", "full", "control" }) {
			RunOptions options = RunOptions.parse(new String[] { "--size=" + size, "--seed=1" });
			assertThat(options.modes())
				.isEqualTo("transactional-listener+lease-listener+batch-listener+http-handler+table-relay");
			assertThat(options.payments()).isEqualTo(options.events() / 5);
			assertThat(options.runs(RunOptions.HTTP)).isTrue();
		}
	}

	@Test
	void theHttpRequestsAreATwentiethOfTheTransfersAndAtLeastAHundred() {
		assertThat(RunOptions.parse(new String[] { "--size=ci", "--seed=1" }).httpRequests()).isEqualTo(250);
		assertThat(RunOptions.parse(new String[] { "--size=full", "--seed=1" }).httpRequests()).isEqualTo(10_000);
		// the control's 300 transfers would give 15: too few for dropped responses in every seed
		assertThat(RunOptions.parse(new String[] { "--size=control", "--seed=1" }).httpRequests()).isEqualTo(100);
		assertThat(RunOptions.parse(new String[] { "--size=ci", "--seed=1", "--events=8000" }).httpRequests())
			.isEqualTo(400);
		assertThat(RunOptions.parse(new String[] { "--size=ci", "--seed=1", "--http-requests=40" }).httpRequests())
			.isEqualTo(40);
	}

	@Test
	void theHttpHandlerRunsWithTheListenersModesNames() {
		RunOptions options = RunOptions
			.parse(new String[] { "--size=ci", "--seed=1", "--modes=http,transactional", "--http-requests=40" });
		assertThat(options.modes()).isEqualTo("transactional-listener+http-handler+table-relay");
		assertThat(options.httpRequests()).isEqualTo(40);
		assertThat(options.payments()).isZero();
		assertThat(Checker.modeTopics(options)).isEmpty();
	}

	@Test
	void modesSelectsTheListenersAndTheSummaryNamesThemInAFixedOrder() {
		RunOptions options = RunOptions
			.parse(new String[] { "--size=ci", "--seed=1", "--modes=batch,transactional", "--relay=replication" });
		assertThat(options.modes()).isEqualTo("transactional-listener+batch-listener+replication-relay");
		assertThat(options.runs(RunOptions.BATCH)).isTrue();
		assertThat(options.runs(RunOptions.LEASE)).isFalse();
		assertThat(options.payments()).isZero();
		assertThat(options.runs(RunOptions.HTTP)).isFalse();
		assertThat(options.httpRequests()).isZero();
	}

	@Test
	void theTransactionalListenerAloneIsTheSuiteAsItWas() {
		RunOptions options = RunOptions.parse(new String[] { "--size=ci", "--seed=1", "--modes=transactional" });
		assertThat(options.modes()).isEqualTo("transactional-listener+table-relay");
		assertThat(Checker.modeTopics(options)).isEmpty();
		assertThat(TransferListeners.topic(4, options.runs(RunOptions.BATCH))).isEqualTo(TransferListeners.TOPIC);
	}

	@Test
	void modesWithoutTheTransactionalListenerOrWithAnUnknownOneAreRejected() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> RunOptions.parse(new String[] { "--size=ci", "--modes=lease,batch" }));
		assertThatIllegalArgumentException()
			.isThrownBy(() -> RunOptions.parse(new String[] { "--size=ci", "--modes=transactional,streams" }));
		assertThatIllegalArgumentException()
			.isThrownBy(() -> RunOptions.parse(new String[] { "--size=ci", "--http-requests=-2" }));
	}

}
