package dev.idempotency.test;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.context.ApplicationContext;

/**
 * Reads counters from an application's meter registry.
 */
public final class TestMeters {

	private TestMeters() {
	}

	/**
	 * Return the sum of the counters with the given name and tags, 0 when there is none.
	 * @param context the application
	 * @param name the meter name
	 * @param tags tag names and values, alternating
	 * @return the sum
	 */
	public static double count(ApplicationContext context, String name, String... tags) {
		return context.getBean(MeterRegistry.class)
			.find(name)
			.tags(tags)
			.counters()
			.stream()
			.mapToDouble(Counter::count)
			.sum();
	}

}
