package dev.idempotency.autoconfigure;

import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.util.ResourceUtils;

/**
 * What a native image of an application with the starter needs of the auto-configuration:
 * the starter's migrations, which its own Flyway reads as class path resources, and the
 * {@code getDataSource()} of the transaction managers whose {@code DataSource} is found by
 * reflection (see {@link IdempotencyAutoConfiguration#managedDataSource}).
 */
final class IdempotencyRuntimeHints implements RuntimeHintsRegistrar {

	private static final List<String> TRANSACTION_MANAGERS_WITH_DATA_SOURCE = List.of(
			"org.springframework.orm.jpa.JpaTransactionManager",
			"org.springframework.orm.jpa.hibernate.HibernateTransactionManager");

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		String location = IdempotencySchemaMigration.LOCATION.substring(ResourceUtils.CLASSPATH_URL_PREFIX.length());
		hints.resources().registerPattern(location + "/*.sql");
		for (String transactionManager : TRANSACTION_MANAGERS_WITH_DATA_SOURCE) {
			hints.reflection()
				.registerTypeIfPresent(classLoader, transactionManager,
						(type) -> type.withMethod("getDataSource", List.of(), ExecutableMode.INVOKE));
		}
	}

}
