package dev.idempotency.reliability;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The workload's listeners as {@code --modes} selects them, and how the summary line names
 * them.
 */
class RunOptionsUnitTests {

	@Test
	void everySizeRunsAllThreeListenersByDefault() {
		for (String size : new String[] { "ci", "full", "control" }) {
			RunOptions options = RunOptions.parse(new String[] { "--size=" + size, "--seed=1" });
			assertThat(options.modes())
				.isEqualTo("transactional-listener+lease-listener+batch-listener+table-relay");
			assertThat(options.payments()).isEqualTo(options.events() / 5);
		}
	}

	@Test
	void modesSelectsTheListenersAndTheSummaryNamesThemInAFixedOrder() {
		RunOptions options = RunOptions
			.parse(new String[] { "--size=ci", "--seed=1", "--modes=batch,transactional", "--relay=replication" });
		assertThat(options.modes()).isEqualTo("transactional-listener+batch-listener+replication-relay");
		assertThat(options.runs(RunOptions.BATCH)).isTrue();
		assertThat(options.runs(RunOptions.LEASE)).isFalse();
		assertThat(options.payments()).isZero();
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
	}

}
