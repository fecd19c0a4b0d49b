package dev.idempotency.autoconfigure;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import dev.idempotency.test.StarterRuntimeHints;
import org.junit.jupiter.api.Test;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.orm.jpa.hibernate.HibernateTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hints a native image needs for what the auto-configuration reads at run time: the
 * starter's migrations, and the {@code DataSource} of a JPA or Hibernate transaction
 * manager.
 */
class IdempotencyRuntimeHintsUnitTests {

	private final RuntimeHints hints = StarterRuntimeHints.registered();

	@Test
	void everyMigrationOfTheStarterIsIncludedAsAResource() throws IOException {
		List<String> migrations = new ArrayList<>();
		for (Resource migration : new PathMatchingResourcePatternResolver()
			.getResources(IdempotencySchemaMigration.LOCATION + "/*")) {
			migrations.add("db/idempotency/postgresql/" + migration.getFilename());
		}
		assertThat(migrations).hasSizeGreaterThanOrEqualTo(5)
			.allMatch((migration) -> RuntimeHintsPredicates.resource().forResource(migration).test(this.hints));
	}

	@Test
	void theApplicationsMigrationsAreLeftToFlywaysOwnHints() {
		assertThat(RuntimeHintsPredicates.resource().forResource("db/migration/V1__init.sql")).rejects(this.hints);
	}

	@Test
	void theDataSourceOfAJpaOrHibernateTransactionManagerCanBeRead() {
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(JpaTransactionManager.class, "getDataSource"))
			.accepts(this.hints);
		assertThat(RuntimeHintsPredicates.reflection()
			.onMethodInvocation(HibernateTransactionManager.class, "getDataSource")).accepts(this.hints);
	}

}
