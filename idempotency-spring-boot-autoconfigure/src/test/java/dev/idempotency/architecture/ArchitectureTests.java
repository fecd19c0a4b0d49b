package dev.idempotency.architecture;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shape of the starter: what is public, and which package may use which. The declared
 * API is the list in the README's "API" section; everything else lives in
 * {@code dev.idempotency.internal..} and carries no compatibility promise.
 */
class ArchitectureTests {

	/**
	 * The API packages: every public type in them is part of the declared API.
	 */
	static final Set<String> API_PACKAGES = Set.of("dev.idempotency", "dev.idempotency.store",
			"dev.idempotency.cache", "dev.idempotency.metrics", "dev.idempotency.outbox",
			"dev.idempotency.autoconfigure");

	/**
	 * The declared API, as the README lists it.
	 */
	static final Set<String> DECLARED_API = Set.of(
			// the annotation and what it names
			"dev.idempotency.Idempotent", "dev.idempotency.Idempotent$Mode", "dev.idempotency.MissingKeyPolicy",
			"dev.idempotency.FingerprintMismatchPolicy",
			// lease mode
			"dev.idempotency.IdempotencyContext", "dev.idempotency.LeaseLostHandler", "dev.idempotency.StoredResultCodec",
			"dev.idempotency.LeaseLostHandler$LostLease",
			// exceptions
			"dev.idempotency.IdempotencyKeyMissingException", "dev.idempotency.IdempotencyKeyInProgressException",
			"dev.idempotency.IdempotencyClaimFailedException", "dev.idempotency.IdempotencyFingerprintMismatchException",
			"dev.idempotency.IdempotencyResultTooLargeException", "dev.idempotency.IdempotencyResultNotStoredException",
			"dev.idempotency.IdempotencyExceptions",
			// key resolution SPI
			"dev.idempotency.IdempotencyKeyResolver", "dev.idempotency.InboundMessage",
			// store SPI
			"dev.idempotency.store.ProcessedMessageStore", "dev.idempotency.store.Claim",
			"dev.idempotency.store.ProcessedMessage", "dev.idempotency.store.LeaseStore",
			"dev.idempotency.store.LeaseClaim", "dev.idempotency.store.LeaseClaim$State",
			// cache SPI
			"dev.idempotency.cache.ProcessedKeyCache",
			// meters: their names and the recorder SPI
			"dev.idempotency.metrics.IdempotencyMeters", "dev.idempotency.metrics.IdempotencyMetrics",
			"dev.idempotency.metrics.IdempotencyMetrics$ListenerMetrics", "dev.idempotency.metrics.Outcome",
			"dev.idempotency.metrics.DecisionSource", "dev.idempotency.metrics.CacheResult",
			// outbox
			"dev.idempotency.outbox.Outbox", "dev.idempotency.outbox.OutboxEvent",
			"dev.idempotency.outbox.OutboxEvent$Builder", "dev.idempotency.outbox.OutboxDeadLetters",
			"dev.idempotency.outbox.OutboxDeadLetters$DeadEvent",
			"dev.idempotency.outbox.OutboxPayloadSerializer", "dev.idempotency.outbox.OutboxMetrics",
			"dev.idempotency.outbox.OutboxStats", "dev.idempotency.outbox.OutboxTraceContext",
			"dev.idempotency.outbox.OutboxProducerFactoryCustomizer",
			// auto-configuration and properties
			"dev.idempotency.autoconfigure.IdempotencyAutoConfiguration",
			"dev.idempotency.autoconfigure.IdempotencyJdbcStoreAutoConfiguration",
			"dev.idempotency.autoconfigure.IdempotencyRedisAutoConfiguration",
			"dev.idempotency.autoconfigure.IdempotencyOutboxAutoConfiguration",
			"dev.idempotency.autoconfigure.IdempotencyMetricsAutoConfiguration",
			"dev.idempotency.autoconfigure.IdempotencySchemaAutoConfiguration",
			"dev.idempotency.autoconfigure.IdempotencyHealthAutoConfiguration",
			"dev.idempotency.autoconfigure.IdempotencyWebAutoConfiguration",
			"dev.idempotency.autoconfigure.IdempotencyProperties",
			"dev.idempotency.autoconfigure.IdempotencyWebProperties",
			"dev.idempotency.autoconfigure.IdempotencyHealthProperties");

	private static final JavaClasses CLASSES = new ClassFileImporter()
		.withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
		// also where a profile builds (target/boot-4.0/test-classes), which the option above misses
		.withImportOption((location) -> !location.contains("/test-classes/"))
		.withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
		.importPackages("dev.idempotency");

	@Test
	void everyPublicTypeOfAnApiPackageIsDeclared() {
		Set<String> undeclared = new TreeSet<>();
		for (JavaClass type : CLASSES) {
			if (API_PACKAGES.contains(type.getPackageName()) && isVisibleOutside(type)
					&& !DECLARED_API.contains(type.getName()) && !isPropertiesGroup(type)) {
				undeclared.add(type.getName());
			}
		}
		assertThat(undeclared).as("public types outside the declared API (make them package-private, move "
				+ "them to dev.idempotency.internal, or declare them in the README and here)").isEmpty();
	}

	@Test
	void everyDeclaredTypeExists() {
		Set<String> names = new TreeSet<>();
		CLASSES.forEach((type) -> names.add(type.getName()));
		assertThat(names).containsAll(DECLARED_API);
	}

	@Test
	void theApiDoesNotExposeInternalTypes() {
		classes().that(inApiPackages())
			.and()
			.arePublic()
			.should(new ArchCondition<>("not expose internal types in public signatures") {

				@Override
				public void check(JavaClass type, ConditionEvents events) {
					for (JavaMember member : type.getMembers()) {
						if (!member.getModifiers().contains(JavaModifier.PUBLIC)
								&& !member.getModifiers().contains(JavaModifier.PROTECTED)) {
							continue;
						}
						for (JavaClass used : signatureTypes(member)) {
							if (used.getPackageName().startsWith("dev.idempotency.internal")) {
								events.add(SimpleConditionEvent.violated(member,
										member.getFullName() + " exposes " + used.getName()));
							}
						}
					}
				}

			})
			.check(CLASSES);
	}

	@Test
	void storesCachesAndKeysDoNotReachIntoTheConsumerOrTheAutoConfiguration() {
		noClasses().that()
			.resideInAnyPackage("dev.idempotency.store..", "dev.idempotency.cache..", "dev.idempotency.key..",
					"dev.idempotency.internal.store..", "dev.idempotency.internal.cache..",
					"dev.idempotency.internal.key..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("dev.idempotency.internal.consumer..", "dev.idempotency.autoconfigure..")
			.check(CLASSES);
	}

	@Test
	void onlyTheAutoConfigurationDependsOnTheAutoConfiguration() {
		noClasses().that()
			.resideOutsideOfPackage("dev.idempotency.autoconfigure..")
			.should()
			.dependOnClassesThat()
			.resideInAPackage("dev.idempotency.autoconfigure..")
			.check(CLASSES);
	}

	@Test
	void theRootPackageDependsOnNothingElseOfTheStarter() {
		noClasses().that()
			.resideInAPackage("dev.idempotency")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("dev.idempotency.(*)..")
			.check(CLASSES);
	}

	@Test
	void metersAndOutboxDoNotDependOnEachOtherBothWays() {
		noClasses().that()
			.resideInAnyPackage("dev.idempotency.outbox..", "dev.idempotency.internal.outbox..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("dev.idempotency.internal.metrics..")
			.check(CLASSES);
	}

	@Test
	void packagesAreFreeOfCycles() {
		slices().matching("dev.idempotency.(**)").should().beFreeOfCycles().check(CLASSES);
	}

	private static DescribedPredicate<JavaClass> inApiPackages() {
		return DescribedPredicate.describe("in an API package", (type) -> API_PACKAGES.contains(type.getPackageName()));
	}

	private static boolean isVisibleOutside(JavaClass type) {
		if (!type.getModifiers().contains(JavaModifier.PUBLIC) || type.isAnonymousClass() || type.isLocalClass()) {
			return false;
		}
		return type.getEnclosingClass().map(ArchitectureTests::isVisibleOutside).orElse(true);
	}

	/**
	 * Nested records of the properties are the properties: their names are the
	 * {@code idempotency.*} keys.
	 */
	private static boolean isPropertiesGroup(JavaClass type) {
		return type.getEnclosingClass()
			.map((outer) -> outer.getName().endsWith("Properties") || isPropertiesGroup(outer))
			.orElse(false);
	}

	private static List<JavaClass> signatureTypes(JavaMember member) {
		List<JavaClass> types = new ArrayList<>();
		if (member instanceof JavaField field) {
			types.addAll(field.getType().getAllInvolvedRawTypes());
		}
		if (member instanceof JavaCodeUnit codeUnit) {
			types.addAll(codeUnit.getReturnType().getAllInvolvedRawTypes());
			codeUnit.getParameterTypes().forEach((parameter) -> types.addAll(parameter.getAllInvolvedRawTypes()));
		}
		return types;
	}

}
