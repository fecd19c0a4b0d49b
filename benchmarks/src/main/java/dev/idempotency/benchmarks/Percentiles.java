package dev.idempotency.benchmarks;

import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;

/**
 * The p50 and p99 of a timer the harness reads.
 */
final class Percentiles {

	private Percentiles() {
	}

	/**
	 * A filter that makes the timer of the given name compute its p50 and p99.
	 * @param timerName the timer's name
	 * @return the filter, to declare as a bean
	 */
	static MeterFilter of(String timerName) {
		return new MeterFilter() {
			@Override
			public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
				if (id.getName().equals(timerName)) {
					return DistributionStatisticConfig.builder().percentiles(0.5, 0.99).build().merge(config);
				}
				return config;
			}
		};
	}

	/**
	 * Read the p50 and p99 of a timer configured by {@link #of(String)}.
	 * @param timer the timer
	 * @param unit the unit of the result
	 * @return p50 and p99
	 */
	static double[] p50p99(Timer timer, TimeUnit unit) {
		double[] values = new double[2];
		for (ValueAtPercentile value : timer.takeSnapshot().percentileValues()) {
			if (value.percentile() == 0.5) {
				values[0] = value.value(unit);
			}
			else if (value.percentile() == 0.99) {
				values[1] = value.value(unit);
			}
		}
		return values;
	}

}
