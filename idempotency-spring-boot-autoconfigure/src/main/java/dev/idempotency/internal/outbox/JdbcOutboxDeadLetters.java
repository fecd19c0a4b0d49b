package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.OutboxDeadLetters;
import java.util.UUID;

/**
 * {@link OutboxDeadLetters} on the outbox table: a re-queued event wakes the relay up.
 */
public final class JdbcOutboxDeadLetters implements OutboxDeadLetters {

	private final OutboxRepository repository;

	private final Runnable wakeUp;

	/**
	 * Create the operations on the given repository.
	 * @param repository the outbox table
	 * @param wakeUp what wakes the relay up after a re-queue
	 */
	public JdbcOutboxDeadLetters(OutboxRepository repository, Runnable wakeUp) {
		this.repository = repository;
		this.wakeUp = wakeUp;
	}

	@Override
	public boolean requeue(UUID eventId) {
		boolean found = this.repository.requeueDead(eventId) > 0;
		this.wakeUp.run();
		return found;
	}

	@Override
	public int requeueAll() {
		int count = this.repository.requeueDead(null);
		this.wakeUp.run();
		return count;
	}

	@Override
	public long count() {
		return this.repository.stats().dead();
	}

}
