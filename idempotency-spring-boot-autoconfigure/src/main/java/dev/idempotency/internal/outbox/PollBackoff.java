package dev.idempotency.internal.outbox;

import java.time.Duration;

/**
 * How long the relay waits before its next poll. After a poll that found events, the poll
 * interval; after polls that found none, a wait that doubles up to the idle poll interval,
 * so that an application that never publishes pays a few statements a minute. A wake-up
 * (a commit on this instance) starts over from the poll interval.
 */
final class PollBackoff {

	private final long pollMillis;

	private final long idleMillis;

	private long idleWait;

	PollBackoff(Duration pollInterval, Duration idlePollInterval) {
		this.pollMillis = pollInterval.toMillis();
		this.idleMillis = Math.max(idlePollInterval.toMillis(), this.pollMillis);
		this.idleWait = this.pollMillis;
	}

	/**
	 * Return the wait before the next poll.
	 * @param claimed the number of events the last poll claimed
	 * @return the wait in milliseconds
	 */
	long next(int claimed) {
		if (claimed > 0) {
			this.idleWait = this.pollMillis;
			return this.pollMillis;
		}
		long wait = this.idleWait;
		this.idleWait = Math.min(this.idleWait * 2, this.idleMillis);
		return wait;
	}

	/**
	 * Events were committed: poll at the normal pace again.
	 */
	void wokenUp() {
		this.idleWait = this.pollMillis;
	}

}
