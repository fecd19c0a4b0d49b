package dev.idempotency.reliability;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The network faults of a plan: drawn from the seed after the other faults, every kind in
 * turn, while the transfers flow, and the black holes and half-open connections longer
 * than the workload's timeouts.
 */
class FaultPlanUnitTests {

	private static final Path WORK = Path.of("target/reliability");

	@Test
	void theCiSizeHasOneNetworkFaultOfEachKindWhileTheTransfersFlow() {
		RunOptions options = RunOptions.ci(20261127L, WORK);
		List<FaultPlan.Fault> network = networkFaults(new FaultPlan(options));
		assertThat(network).extracting(FaultPlan.Fault::kind)
			.containsExactlyInAnyOrder(FaultPlan.Kind.LATENCY, FaultPlan.Kind.DROP_CONNECTIONS,
					FaultPlan.Kind.BLACK_HOLE, FaultPlan.Kind.HALF_OPEN);
		for (FaultPlan.Fault fault : network) {
			assertThat(fault.at()).isBetween(options.window().dividedBy(10),
					options.window().multipliedBy(7).dividedBy(10));
			assertThat(fault.target()).isBetween(0, FaultPlan.SERVERS.size() - 1);
			switch (fault.kind()) {
				case LATENCY -> {
					assertThat(fault.delay()).isBetween(Duration.ofMillis(50), Duration.ofMillis(250));
					assertThat(fault.duration()).isBetween(Duration.ofSeconds(2), Duration.ofSeconds(6));
				}
				case BLACK_HOLE, HALF_OPEN -> assertThat(fault.duration())
					.isGreaterThanOrEqualTo(FaultPlan.BLACK_HOLE_MIN)
					// longer than the workload's 8 s statement and Kafka request timeouts
					.isGreaterThan(Duration.ofSeconds(8));
				default -> assertThat(fault.duration()).isZero();
			}
		}
	}

	@Test
	void networkFaultsLeaveTheScheduleOfTheOtherFaultsAsTheSeedGaveIt() {
		RunOptions options = RunOptions.ci(7, WORK);
		RunOptions without = RunOptions.parse(new String[] { "--seed=7", "--network-faults=0" });
		List<FaultPlan.Fault> others = new FaultPlan(options).faults()
			.stream()
			.filter((fault) -> !fault.kind().isNetworkFault())
			.toList();
		assertThat(networkFaults(new FaultPlan(without))).isEmpty();
		assertThat(new FaultPlan(without).faults()).isEqualTo(others);
	}

	@Test
	void theSameSeedGivesTheSameNetworkFaultsAndTheirKindsComeInTurn() {
		RunOptions options = RunOptions.parse(new String[] { "--seed=11", "--network-faults=50" });
		List<FaultPlan.Fault> network = networkFaults(new FaultPlan(options));
		assertThat(network).hasSize(50).isEqualTo(networkFaults(new FaultPlan(options)));
		assertThat(network).filteredOn((fault) -> fault.kind() == FaultPlan.Kind.LATENCY).hasSize(13);
		assertThat(network).filteredOn((fault) -> fault.kind() == FaultPlan.Kind.DROP_CONNECTIONS).hasSize(13);
		assertThat(network).filteredOn((fault) -> fault.kind() == FaultPlan.Kind.BLACK_HOLE).hasSize(12);
		assertThat(network).filteredOn((fault) -> fault.kind() == FaultPlan.Kind.HALF_OPEN).hasSize(12);
		assertThat(network).extracting(FaultPlan.Fault::target).contains(0, 1, 2);
		assertThat(networkFaults(new FaultPlan(RunOptions.parse(new String[] { "--seed=12", "--network-faults=50" }))))
			.isNotEqualTo(network);
	}

	private static List<FaultPlan.Fault> networkFaults(FaultPlan plan) {
		return plan.faults().stream().filter((fault) -> fault.kind().isNetworkFault()).toList();
	}

}
