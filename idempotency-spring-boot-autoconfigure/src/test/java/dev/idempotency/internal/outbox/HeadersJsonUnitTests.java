package dev.idempotency.internal.outbox;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.entry;

/**
 * Reading the text form of the outbox's {@code headers} column as PostgreSQL prints a
 * {@code jsonb} value.
 */
class HeadersJsonUnitTests {

	@Test
	void readsAnEmptyObject() {
		assertThat(HeadersJson.parse("{}")).isEmpty();
	}

	@Test
	void readsStringMembersInTheirOrderWithTheirEscapes() {
		assertThat(HeadersJson.parse("{\"a\": \"1\", \"b\": \"x \\\"y\\\" \\\\ \\n\\t\\u0001 é 東\"}"))
			.containsExactly(entry("a", "1"),
					entry("b", "x \"y\" \\ \n\t\u0001 é 東"));
	}

	@Test
	void keepsOtherValuesAsTheirJsonText() {
		assertThat(HeadersJson.parse("{\"n\": 12.5, \"t\": true, \"z\": null}")).containsEntry("n", "12.5")
			.containsEntry("t", "true")
			.containsEntry("z", "null");
	}

	@Test
	void refusesWhatIsNotAFlatObject() {
		assertThatIllegalArgumentException().isThrownBy(() -> HeadersJson.parse("[1]"));
		assertThatIllegalArgumentException().isThrownBy(() -> HeadersJson.parse("{\"a\": \"1\""));
	}

}
