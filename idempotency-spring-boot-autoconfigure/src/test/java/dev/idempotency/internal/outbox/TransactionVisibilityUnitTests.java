package dev.idempotency.internal.outbox;

import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How {@link TransactionVisibility} reads a snapshot: 64-bit ids against the stream's
 * 32-bit ones, across an epoch.
 */
class TransactionVisibilityUnitTests {

	@Test
	void aTransactionIsVisibleBelowXminOrBelowXmaxAndNotRunning() {
		assertThat(TransactionVisibility.allVisible("100:110:", List.of(105, 99))).isTrue();
		assertThat(TransactionVisibility.allVisible("100:110:103,105", List.of(104, 99))).isTrue();
		assertThat(TransactionVisibility.allVisible("100:110:103,105", List.of(104, 105))).isFalse();
	}

	@Test
	void aCommittedTransactionNotYetVisibleMayBeAtOrAboveXmax() {
		// a commit waiting for a synchronous standby: xmax has not moved past it
		assertThat(TransactionVisibility.allVisible("748:748:", List.of(748))).isFalse();
		assertThat(TransactionVisibility.allVisible("748:748:", List.of(749))).isFalse();
		assertThat(TransactionVisibility.allVisible("748:748:", List.of(747))).isTrue();
	}

	@Test
	void aStreamIdIsTheFullIdNearestTheSnapshot() {
		long epoch = 1L << 32;
		long xmin = 3 * epoch + 5;
		// 0xFFFFFFF0 is of the epoch before, 7 of the snapshot's own
		assertThat(TransactionVisibility.full(0xFFFFFFF0, xmin)).isEqualTo(2 * epoch + 0xFFFFFFF0L);
		assertThat(TransactionVisibility.full(7, xmin)).isEqualTo(3 * epoch + 7);
		// a snapshot just before an epoch's end, and a transaction just after it
		assertThat(TransactionVisibility.full(2, 3 * epoch - 3)).isEqualTo(3 * epoch + 2);
		String snapshot = (2 * epoch + 0xFFFFFFF0L) + ":" + (3 * epoch + 5) + ":" + (2 * epoch + 0xFFFFFFF0L);
		assertThat(TransactionVisibility.allVisible(snapshot, List.of(0xFFFFFFF0))).isFalse();
		assertThat(TransactionVisibility.allVisible(snapshot, List.of(3))).isTrue();
		assertThat(TransactionVisibility.allVisible(snapshot, List.of(5))).isFalse();
	}

}
