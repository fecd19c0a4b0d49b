package dev.idempotency.internal.outbox;

import dev.idempotency.internal.key.CurrentHandling;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxPayloadSerializer;
import dev.idempotency.outbox.OutboxTraceContext;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * {@link Outbox} on the outbox table: the event is inserted in the caller's transaction,
 * and the relay is woken up after that transaction commits. The current trace context is
 * stored with the event's headers; a header the event sets itself is kept.
 */
public final class JdbcOutbox implements Outbox {

	private final OutboxRepository repository;

	private final OutboxPayloadSerializer serializer;

	private final Runnable wakeUp;

	private final OutboxTraceContext traceContext;

	private boolean derivedEventIds;

	/**
	 * Create an outbox.
	 * @param repository the outbox table
	 * @param serializer turns payloads into bytes
	 * @param wakeUp wakes the local relay after a commit
	 */
	public JdbcOutbox(OutboxRepository repository, OutboxPayloadSerializer serializer, Runnable wakeUp) {
		this(repository, serializer, wakeUp, OutboxTraceContext.NONE);
	}

	/**
	 * Create an outbox that stores the current trace context with each event.
	 * @param repository the outbox table
	 * @param serializer turns payloads into bytes
	 * @param wakeUp wakes the local relay after a commit
	 * @param traceContext writes the current trace context into the event's headers
	 */
	public JdbcOutbox(OutboxRepository repository, OutboxPayloadSerializer serializer, Runnable wakeUp,
			OutboxTraceContext traceContext) {
		this.repository = repository;
		this.serializer = serializer;
		this.wakeUp = wakeUp;
		this.traceContext = traceContext;
	}

	/**
	 * Set whether an event published while an idempotent handling runs on the thread gets
	 * an id derived from the handled key ({@link CurrentHandling}), instead of a random one.
	 * @param derivedEventIds whether to derive event ids
	 */
	public void setDerivedEventIds(boolean derivedEventIds) {
		this.derivedEventIds = derivedEventIds;
	}

	@Override
	public UUID publish(OutboxEvent event) {
		if (!TransactionSynchronizationManager.isActualTransactionActive()) {
			throw new IllegalTransactionStateException("Outbox.publish must be called inside a transaction, so that "
					+ "the event is published if and only if the transaction commits; call it from @Transactional "
					+ "(or @Idempotent listener) code");
		}
		if (!TransactionSynchronizationManager.hasResource(this.repository.dataSource())) {
			// JdbcTemplate would take a connection of its own in auto-commit mode: the event
			// would be committed at once, whatever the transaction does
			throw new IllegalTransactionStateException("Outbox.publish must be called inside a transaction of the "
					+ "outbox's DataSource; the current transaction holds no connection of it (a transaction "
					+ "manager of another DataSource, or of Kafka?)");
		}
		byte[] payload = this.serializer.serialize(event.payload());
		Runnable rewind = this.derivedEventIds ? CurrentHandling.rewind() : null;
		UUID eventId = (rewind != null) ? CurrentHandling.nextEventId(event.topic()) : null;
		if (eventId == null) {
			eventId = UUID.randomUUID();
		}
		this.repository.insert(eventId, withTraceContext(event), payload);
		TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
			@Override
			public void afterCommit() {
				JdbcOutbox.this.wakeUp.run();
			}

			@Override
			public void afterCompletion(int status) {
				if (status == STATUS_ROLLED_BACK && rewind != null) {
					// the handling's next attempt publishes this event at the same position
					rewind.run();
				}
			}
		});
		return eventId;
	}

	private OutboxEvent withTraceContext(OutboxEvent event) {
		if (this.traceContext == OutboxTraceContext.NONE) {
			return event;
		}
		Map<String, String> headers = new LinkedHashMap<>();
		this.traceContext.inject(headers);
		if (headers.isEmpty()) {
			return event;
		}
		headers.putAll(event.headers());
		return new OutboxEvent(event.topic(), event.key(), event.payload(), headers, event.type(),
				event.aggregateType());
	}

}
