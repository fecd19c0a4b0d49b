package dev.idempotency.internal.web;

import dev.idempotency.test.StarterRuntimeHints;
import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hints a native image needs for what the HTTP support reads by reflection: the
 * stored response, written and read as JSON, and the root object of key expressions.
 */
class WebRuntimeHintsUnitTests {

	private final RuntimeHints hints = StarterRuntimeHints.registered();

	@Test
	void theStoredResponseCanBeWrittenAndReadAsJson() {
		assertThat(RuntimeHintsPredicates.reflection()
			.onType(StoredResponse.class)
			.withMemberCategories(MemberCategory.INVOKE_DECLARED_CONSTRUCTORS, MemberCategory.INVOKE_DECLARED_METHODS))
			.accepts(this.hints);
	}

	@Test
	void keyExpressionsCanReadTheRequest() {
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(RequestKeyRoot.class, "getHeaders"))
			.accepts(this.hints);
	}

}
