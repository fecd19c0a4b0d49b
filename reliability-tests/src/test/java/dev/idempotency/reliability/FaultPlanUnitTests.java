package dev.idempotency.reliability;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The network faults of a plan: drawn from the seed after the other faults, every kind in
 * turn, while the transfers flow, and the black holes and half-open connections longer
 * than the workload's timeouts. The long outages: at the full size only, drawn after
 * every other fault, longer than the infrastructure retry's longest interval. The broker
 * kills: at the full size only (on three brokers), drawn last, their targets in turn.
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

	@Test
	void theFullSizeHasOneLongPostgresOutageAndOneLongRedisOutage() {
		RunOptions options = RunOptions.full(20261123L, WORK);
		List<FaultPlan.Fault> outages = longOutages(new FaultPlan(options));
		assertThat(outages).extracting(FaultPlan.Fault::kind)
			.containsExactlyInAnyOrder(FaultPlan.Kind.LONG_PG_OUTAGE, FaultPlan.Kind.LONG_REDIS_OUTAGE);
		for (FaultPlan.Fault fault : outages) {
			assertThat(fault.at()).isBetween(options.window().dividedBy(10),
					options.window().multipliedBy(9).dividedBy(10));
			if (fault.kind() == FaultPlan.Kind.LONG_PG_OUTAGE) {
				// past the starter's default infrastructure retry's longest interval (30 s)
				assertThat(fault.duration()).isBetween(Duration.ofSeconds(120), Duration.ofSeconds(150))
					.isGreaterThan(Duration.ofSeconds(30));
			}
			else {
				assertThat(fault.duration()).isBetween(Duration.ofMinutes(2), Duration.ofMinutes(4));
			}
		}
		assertThat(options.longOutages()).isTrue();
	}

	@Test
	void theCiSizeAndTheControlHaveNoLongOutage() {
		for (RunOptions options : List.of(RunOptions.ci(20261127L, WORK), RunOptions.control(42, WORK),
				RunOptions.parse(new String[] { "--seed=3" }))) {
			assertThat(longOutages(new FaultPlan(options))).isEmpty();
			assertThat(options.longOutages()).isFalse();
		}
	}

	@Test
	void longOutagesLeaveTheScheduleOfEveryOtherFaultAsTheSeedGaveIt() {
		RunOptions with = RunOptions
			.parse(new String[] { "--seed=5", "--long-pg-outages=1", "--long-redis-outages=1", "--window=150s" });
		RunOptions without = RunOptions.parse(new String[] { "--seed=5", "--window=150s" });
		List<FaultPlan.Fault> plan = new FaultPlan(with).faults();
		assertThat(longOutages(new FaultPlan(with))).hasSize(2);
		assertThat(plan.stream().filter((fault) -> !isLongOutage(fault)).toList())
			.isEqualTo(new FaultPlan(without).faults());
		// and at the full size, with its network faults drawn before them (its broker kills after)
		RunOptions full = RunOptions.full(20261123L, WORK);
		RunOptions fullWithout = RunOptions.parse(new String[] { "--size=full", "--seed=20261123",
				"--long-pg-outages=0", "--long-redis-outages=0", "--broker-kills=0" });
		assertThat(new FaultPlan(full).faults()
			.stream()
			.filter((fault) -> !isLongOutage(fault) && fault.kind() != FaultPlan.Kind.BROKER_KILL)
			.toList()).isEqualTo(new FaultPlan(fullWithout).faults());
	}

	@Test
	void theSameSeedGivesTheSameLongOutages() {
		String[] args = { "--seed=11", "--long-pg-outages=3", "--long-redis-outages=2" };
		List<FaultPlan.Fault> outages = longOutages(new FaultPlan(RunOptions.parse(args)));
		assertThat(outages).hasSize(5).isEqualTo(longOutages(new FaultPlan(RunOptions.parse(args))));
		assertThat(outages).filteredOn((fault) -> fault.kind() == FaultPlan.Kind.LONG_PG_OUTAGE).hasSize(3);
		assertThat(outages).filteredOn((fault) -> fault.kind() == FaultPlan.Kind.LONG_REDIS_OUTAGE).hasSize(2);
		assertThat(longOutages(new FaultPlan(RunOptions
			.parse(new String[] { "--seed=12", "--long-pg-outages=3", "--long-redis-outages=2" })))).isNotEqualTo(outages);
	}

	@Test
	void theCiSizeAndTheControlHaveOneBrokerAndNoBrokerKill() {
		for (RunOptions options : List.of(RunOptions.ci(20261127L, WORK), RunOptions.control(42, WORK),
				RunOptions.parse(new String[] { "--seed=3" }))) {
			assertThat(options.brokers()).isEqualTo(1);
			assertThat(brokerKills(new FaultPlan(options))).isEmpty();
		}
	}

	@Test
	void theFullSizeHasThreeBrokersAndTwentyBrokerKillsWhoseTargetsComeInTurn() {
		RunOptions options = RunOptions.full(20261127L, WORK);
		assertThat(options.brokers()).isEqualTo(3);
		List<FaultPlan.Fault> kills = brokerKills(new FaultPlan(options));
		assertThat(kills).hasSizeGreaterThanOrEqualTo(20);
		for (int target = 0; target < FaultPlan.BROKER_KILL_TARGETS.size(); target++) {
			assertThat(kills).extracting(FaultPlan.Fault::target).filteredOn(Integer.valueOf(target)::equals).hasSize(5);
		}
		for (FaultPlan.Fault fault : kills) {
			assertThat(fault.at()).isBetween(options.window().dividedBy(10),
					options.window().multipliedBy(9).dividedBy(10));
			assertThat(fault.duration()).isBetween(Duration.ofSeconds(2), Duration.ofSeconds(6));
			assertThat(fault.fraction()).isBetween(0.0, 1.0);
		}
	}

	@Test
	void brokerKillsAreOverridableAndLeaveTheScheduleOfEveryOtherFaultAsTheSeedGaveIt() {
		RunOptions with = RunOptions.parse(new String[] { "--seed=5", "--brokers=3", "--broker-kills=4" });
		RunOptions without = RunOptions.parse(new String[] { "--seed=5" });
		assertThat(with.brokers()).isEqualTo(3);
		List<FaultPlan.Fault> plan = new FaultPlan(with).faults();
		assertThat(brokerKills(new FaultPlan(with))).hasSize(4)
			.extracting(FaultPlan.Fault::target)
			.containsExactlyInAnyOrder(0, 1, 2, 3);
		assertThat(plan.stream().filter((fault) -> fault.kind() != FaultPlan.Kind.BROKER_KILL).toList())
			.isEqualTo(new FaultPlan(without).faults());
		assertThat(brokerKills(new FaultPlan(with))).isEqualTo(brokerKills(new FaultPlan(with)));
	}

	@Test
	void brokerKillsNeedAClusterOfThree() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> RunOptions.parse(new String[] { "--seed=5", "--broker-kills=1" }));
		assertThatIllegalArgumentException().isThrownBy(() -> RunOptions.parse(new String[] { "--brokers=2" }));
		assertThatIllegalArgumentException()
			.isThrownBy(() -> RunOptions.parse(new String[] { "--size=full", "--brokers=1" }));
		assertThat(RunOptions.parse(new String[] { "--size=full", "--brokers=1", "--broker-kills=0" }).brokers())
			.isEqualTo(1);
	}

	private static List<FaultPlan.Fault> brokerKills(FaultPlan plan) {
		return plan.faults().stream().filter((fault) -> fault.kind() == FaultPlan.Kind.BROKER_KILL).toList();
	}

	private static boolean isLongOutage(FaultPlan.Fault fault) {
		return fault.kind() == FaultPlan.Kind.LONG_PG_OUTAGE || fault.kind() == FaultPlan.Kind.LONG_REDIS_OUTAGE;
	}

	private static List<FaultPlan.Fault> longOutages(FaultPlan plan) {
		return plan.faults().stream().filter(FaultPlanUnitTests::isLongOutage).toList();
	}

	private static List<FaultPlan.Fault> networkFaults(FaultPlan plan) {
		return plan.faults().stream().filter((fault) -> fault.kind().isNetworkFault()).toList();
	}

}
