package dev.idempotency.reliability;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the checker reports of the HTTP handler's requests: each applied once and
 * answered passes; a request applied twice, never applied or unanswered is a violation,
 * and so is a run whose proxies dropped no response, in which the fault never happened.
 */
class HttpCountUnitTests {

	@Test
	void requestsAppliedOnceAndAnsweredAfterDroppedResponsesPass() {
		assertThat(Checker.httpViolations(new Checker.HttpCount(250, 180, 60, 0, 250, 0, 0, 250))).isEmpty();
	}

	@Test
	void aRequestAppliedTwiceNeverAppliedOrUnansweredIsReported() {
		assertThat(Checker.httpViolations(new Checker.HttpCount(100, 40, 20, 0, 81, 19, 0, 120)))
			.containsExactly("19 HTTP requests applied more than once (120 applications of 100 requests)");
		assertThat(Checker.httpViolations(new Checker.HttpCount(100, 40, 20, 0, 99, 0, 1, 99)))
			.containsExactly("1 HTTP requests never applied");
		assertThat(Checker.httpViolations(new Checker.HttpCount(100, 40, 20, 2, 100, 0, 0, 100)))
			.containsExactly("2 HTTP requests without a definite answer");
	}

	@Test
	void aRunWithoutADroppedResponseFails() {
		assertThat(Checker.httpViolations(new Checker.HttpCount(100, 0, 0, 0, 100, 0, 0, 100))).singleElement()
			.asString()
			.startsWith("no HTTP response was dropped");
	}

}
