package dev.idempotency.outbox;

import java.util.UUID;

/**
 * Operations on dead outbox events: events that failed every attempt. A dead event blocks
 * the later events of its key, so that they are never published out of order; once the
 * cause is fixed, re-queue it and they follow it.
 */
public final class OutboxDeadLetters {

	private final OutboxRepository repository;

	private final Runnable wakeUp;

	public OutboxDeadLetters(OutboxRepository repository, Runnable wakeUp) {
		this.repository = repository;
		this.wakeUp = wakeUp;
	}

	/**
	 * Put one dead event back in line, with its attempts reset.
	 * @param eventId the event id
	 * @return whether a dead event with that id was found
	 */
	public boolean requeue(UUID eventId) {
		boolean found = this.repository.requeueDead(eventId) > 0;
		this.wakeUp.run();
		return found;
	}

	/**
	 * Put all dead events back in line, with their attempts reset.
	 * @return the number re-queued
	 */
	public int requeueAll() {
		int count = this.repository.requeueDead(null);
		this.wakeUp.run();
		return count;
	}

	/**
	 * Return the number of dead events.
	 * @return the count
	 */
	public long count() {
		return this.repository.stats().dead();
	}

}
