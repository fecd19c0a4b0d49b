package dev.idempotency.test;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.core.io.support.SpringFactoriesLoader;

/**
 * The runtime hints the starter contributes to an application's AOT processing: those of
 * its registrars, found as Spring AOT finds them (in {@code META-INF/spring/aot.factories}),
 * without those of the other libraries on the classpath.
 */
public final class StarterRuntimeHints {

	private StarterRuntimeHints() {
	}

	/**
	 * Apply the starter's registrars to new hints.
	 * @return the hints
	 */
	public static RuntimeHints registered() {
		RuntimeHints hints = new RuntimeHints();
		ClassLoader classLoader = StarterRuntimeHints.class.getClassLoader();
		SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories", classLoader)
			.load(RuntimeHintsRegistrar.class)
			.stream()
			.filter((registrar) -> registrar.getClass().getName().startsWith("dev.idempotency."))
			.forEach((registrar) -> registrar.registerHints(hints, classLoader));
		return hints;
	}

}
