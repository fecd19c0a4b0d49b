package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.springframework.kafka.support.Acknowledgment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Tests for {@link DeferredAcknowledgment}.
 */
class DeferredAcknowledgmentUnitTests {

	private final List<String> calls = new ArrayList<>();

	private final Acknowledgment container = new Acknowledgment() {

		@Override
		public void acknowledge() {
			DeferredAcknowledgmentUnitTests.this.calls.add("ack");
		}

		@Override
		public void acknowledge(int index) {
			DeferredAcknowledgmentUnitTests.this.calls.add("ack " + index);
		}

		@Override
		public void nack(Duration sleep) {
			DeferredAcknowledgmentUnitTests.this.calls.add("nack");
		}

		@Override
		public void nack(int index, Duration sleep) {
			DeferredAcknowledgmentUnitTests.this.calls.add("nack " + index);
		}

	};

	@Test
	void passesNothingOnBeforeRelease() {
		DeferredAcknowledgment deferred = DeferredAcknowledgment.ofRecord(this.container);
		deferred.acknowledge();
		assertThat(this.calls).isEmpty();
		deferred.release();
		assertThat(this.calls).containsExactly("ack");
	}

	@Test
	void passesCallsAfterReleaseOnAtOnce() {
		DeferredAcknowledgment deferred = DeferredAcknowledgment.ofRecord(this.container);
		deferred.release();
		deferred.acknowledge();
		assertThat(this.calls).containsExactly("ack");
	}

	@Test
	void dropsTheAcknowledgmentOfARecordItNacked() {
		DeferredAcknowledgment deferred = DeferredAcknowledgment.ofRecord(this.container);
		deferred.acknowledge();
		deferred.nack(Duration.ofMillis(1));
		deferred.release();
		assertThat(this.calls).containsExactly("nack");
	}

	@Test
	void translatesBatchIndexesAndKeepsOnlyAcknowledgmentsBeforeTheNack() {
		// the listener saw the delivered records 1, 3 and 4
		int[] delivered = { 1, 3, 4 };
		DeferredAcknowledgment deferred = DeferredAcknowledgment.ofBatch(this.container, (index) -> delivered[index]);
		deferred.acknowledge(0);
		deferred.acknowledge(2);
		deferred.acknowledge();
		deferred.nack(1, Duration.ofMillis(1));
		deferred.release();
		assertThat(this.calls).containsExactly("ack 1", "nack 3");
	}

	@Test
	void refusesTheCallsTheContainersAcknowledgmentDoesNotSupportAtOnce() {
		DeferredAcknowledgment batch = DeferredAcknowledgment.ofBatch(this.container, (index) -> index);
		assertThatExceptionOfType(UnsupportedOperationException.class)
			.isThrownBy(() -> batch.nack(Duration.ofMillis(1)));
		assertThat(batch.isNacked()).isFalse();
		DeferredAcknowledgment record = DeferredAcknowledgment.ofRecord(this.container);
		assertThatExceptionOfType(UnsupportedOperationException.class).isThrownBy(() -> record.acknowledge(0));
		assertThatExceptionOfType(UnsupportedOperationException.class)
			.isThrownBy(() -> record.nack(0, Duration.ofMillis(1)));
		assertThat(record.isNacked()).isFalse();
	}

	@Test
	void forgetsEverythingWhenDiscarded() {
		DeferredAcknowledgment deferred = DeferredAcknowledgment.ofBatch(this.container, (index) -> index);
		deferred.acknowledge();
		deferred.nack(0, Duration.ofMillis(1));
		deferred.discard();
		deferred.release();
		assertThat(this.calls).isEmpty();
	}

}
