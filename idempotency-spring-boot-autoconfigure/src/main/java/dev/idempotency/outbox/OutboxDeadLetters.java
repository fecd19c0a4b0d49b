package dev.idempotency.outbox;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

import org.jspecify.annotations.Nullable;

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

	/**
	 * List dead events, the oldest first, to see what failed and why.
	 * @param limit the most events to return
	 * @return the dead events, in the order they were written
	 */
	List<DeadEvent> list(int limit);

	/**
	 * Give up on one dead event: delete it, so that the later events of its key are
	 * published without it. It is never published; use it for an event that cannot be
	 * sent whatever is fixed (one over the topic's {@code max.message.bytes}, say), after
	 * acting on it some other way.
	 * @param eventId the event id
	 * @return whether a dead event with that id was found
	 */
	boolean discard(UUID eventId);

	/**
	 * A dead event.
	 *
	 * @param eventId the event id
	 * @param topic the topic it was to be published to
	 * @param key the record key (the aggregate id), or {@code null}
	 * @param type the event type, or {@code null}
	 * @param attempts the attempts it failed
	 * @param lastError the error of its last attempt
	 * @param createdAt when it was written
	 */
	record DeadEvent(UUID eventId, String topic, @Nullable String key, @Nullable String type, int attempts,
			@Nullable String lastError, Instant createdAt) {

	}

}
