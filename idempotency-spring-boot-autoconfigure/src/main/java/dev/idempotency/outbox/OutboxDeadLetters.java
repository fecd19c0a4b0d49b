package dev.idempotency.outbox;

import java.util.UUID;

/**
 * Operations on dead outbox events: events that failed every attempt. A dead event blocks
 * the later events of its key, so that they are never published out of order; once the
 * cause is fixed, re-queue it and they follow it.
 */
public interface OutboxDeadLetters {

	/**
	 * Put one dead event back in line, with its attempts reset.
	 * @param eventId the event id
	 * @return whether a dead event with that id was found
	 */
	boolean requeue(UUID eventId);

	/**
	 * Put all dead events back in line, with their attempts reset.
	 * @return the number re-queued
	 */
	int requeueAll();

	/**
	 * Return the number of dead events.
	 * @return the count
	 */
	long count();

}
