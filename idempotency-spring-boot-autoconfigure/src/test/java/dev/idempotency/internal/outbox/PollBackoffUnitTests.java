package dev.idempotency.internal.outbox;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class PollBackoffUnitTests {

	private final PollBackoff backoff = new PollBackoff(Duration.ofMillis(500), Duration.ofSeconds(5));

	@Test
	void waitsThePollIntervalWhileEventsArrive() {
		assertThat(this.backoff.next(3)).isEqualTo(500);
		assertThat(this.backoff.next(1)).isEqualTo(500);
	}

	@Test
	void doublesTheWaitWhileTheOutboxStaysEmptyUpToTheIdlePollInterval() {
		assertThat(new long[] { this.backoff.next(0), this.backoff.next(0), this.backoff.next(0),
				this.backoff.next(0), this.backoff.next(0), this.backoff.next(0) })
			.containsExactly(500, 1000, 2000, 4000, 5000, 5000);
	}

	@Test
	void startsOverAfterAPollThatFoundEvents() {
		this.backoff.next(0);
		this.backoff.next(0);
		this.backoff.next(0);
		assertThat(this.backoff.next(2)).isEqualTo(500);
		assertThat(this.backoff.next(0)).isEqualTo(500);
		assertThat(this.backoff.next(0)).isEqualTo(1000);
	}

	@Test
	void startsOverAfterAWakeUp() {
		this.backoff.next(0);
		this.backoff.next(0);
		this.backoff.next(0);
		this.backoff.wokenUp();
		assertThat(this.backoff.next(0)).isEqualTo(500);
	}

	@Test
	void neverWaitsLessThanThePollIntervalWhenTheIdleIntervalIsShorter() {
		PollBackoff flat = new PollBackoff(Duration.ofSeconds(1), Duration.ofMillis(100));
		assertThat(new long[] { flat.next(0), flat.next(0), flat.next(0) }).containsExactly(1000, 1000, 1000);
	}

}
