package dev.idempotency.reliability;

import java.util.List;

import dev.idempotency.reliability.LeaseCount.Call;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lease-mode counts on crafted calls to the effect store: what the checker must catch
 * (a second charge under one token, a payment never charged, a stale token accepted) and
 * what it must let pass (a charge run again under a new owner's larger token, a stale
 * call the fence turned away).
 */
class LeaseCountUnitTests {

	@Test
	void countsAPaymentChargedOnceAsAppliedOnce() {
		LeaseCount count = LeaseCount.of(List.of(1L, 2L), List.of(new Call(1, 10, true), new Call(2, 11, true)));
		assertThat(count).isEqualTo(new LeaseCount(2, 2, 0, 0, 0, 0, 0));
		assertThat(count.violations()).isEmpty();
	}

	@Test
	void countsAChargeRunAgainUnderALargerTokenAsARerunNotAViolation() {
		// a crash between the charge and the completion: the takeover charges again
		LeaseCount count = LeaseCount.of(List.of(1L), List.of(new Call(1, 10, true), new Call(1, 17, true)));
		assertThat(count).isEqualTo(new LeaseCount(1, 0, 1, 0, 0, 0, 0));
		assertThat(count.violations()).isEmpty();
	}

	@Test
	void countsAStaleCallTheFenceRejectedAsFencedNotAViolation() {
		// a consumer paused past its lease calls after the one that took its key over
		LeaseCount count = LeaseCount.of(List.of(1L), List.of(new Call(1, 17, true), new Call(1, 10, false)));
		assertThat(count).isEqualTo(new LeaseCount(1, 1, 0, 0, 0, 1, 0));
		assertThat(count.violations()).isEmpty();
	}

	@Test
	void catchesTwoChargesUnderOneToken() {
		// the listener without @Idempotent, or a claim run twice
		LeaseCount count = LeaseCount.of(List.of(1L, 2L),
				List.of(new Call(1, 0, true), new Call(2, 0, true), new Call(1, 0, true)));
		assertThat(count.appliedTwice()).isEqualTo(1);
		assertThat(count.appliedOnce()).isEqualTo(1);
		assertThat(count.violations()).containsExactly("1 payments charged twice under one fencing token");
	}

	@Test
	void catchesAPaymentNeverCharged() {
		LeaseCount count = LeaseCount.of(List.of(1L, 2L), List.of(new Call(1, 10, true)));
		assertThat(count.lost()).isEqualTo(1);
		assertThat(count.violations()).containsExactly("1 payments never charged");
	}

	@Test
	void catchesAStaleTokenAccepted() {
		// the store's fence off: the paused consumer's late call is accepted
		LeaseCount count = LeaseCount.of(List.of(1L), List.of(new Call(1, 17, true), new Call(1, 10, true)));
		assertThat(count.fenceViolations()).isEqualTo(1);
		assertThat(count.violations()).containsExactly("1 charges accepted with a token below one seen before");
	}

}
