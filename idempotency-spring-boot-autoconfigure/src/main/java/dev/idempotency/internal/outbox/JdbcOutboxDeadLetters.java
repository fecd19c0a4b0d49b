package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.OutboxDeadLetters;
import java.util.List;
import java.util.UUID;

import org.springframework.util.Assert;

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
		return this.repository.countDead();
	}

	@Override
	public List<DeadEvent> list(int limit) {
		Assert.isTrue(limit > 0, "The limit must be positive");
		return this.repository.listDead(limit);
	}

	@Override
	public boolean discard(UUID eventId) {
		boolean found = this.repository.discardDead(eventId) > 0;
		this.wakeUp.run();
		return found;
	}

}
