package dev.idempotency.reliability;

import java.util.List;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import dev.idempotency.outbox.Outbox;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Applies a transfer with updates that are not idempotent ({@code balance = balance + ?}),
 * records the effect, and publishes one event through the outbox with the source
 * account's next sequence number. Runs in the caller's transaction.
 */
final class Ledger {

	static final String EVENTS_TOPIC = "transfer-events";

	private final JdbcTemplate jdbc;

	private final Outbox outbox;

	private final String worker;

	Ledger(JdbcTemplate jdbc, Outbox outbox, String worker) {
		this.jdbc = jdbc;
		this.outbox = outbox;
		this.worker = worker;
	}

	/**
	 * Apply transfers in one transaction, in their order, having locked every account they
	 * touch in id order first: the order {@link #apply} locks its two in, so that a batch
	 * and a single transfer never deadlock.
	 */
	void applyAll(List<Transfer> transfers) {
		if (transfers.isEmpty()) {
			return;
		}
		String accounts = transfers.stream()
			.flatMap((transfer) -> Stream.of(transfer.from(), transfer.to()))
			.distinct()
			.map(String::valueOf)
			.collect(Collectors.joining(","));
		this.jdbc.queryForList("SELECT id FROM accounts WHERE id IN (" + accounts + ") ORDER BY id FOR UPDATE",
				Integer.class);
		transfers.forEach(this::apply);
	}

	void apply(Transfer transfer) {
		long sequence = move(transfer);
		UUID eventId = this.outbox.publish(EVENTS_TOPIC, String.valueOf(transfer.from()),
				transfer.id() + "," + transfer.from() + "," + sequence);
		this.jdbc.update("""
				INSERT INTO transfer_effects (transfer_id, event_id, account, seq, worker)
				VALUES (?, ?, ?, ?, ?)""", transfer.id(), eventId, transfer.from(), sequence, this.worker);
	}

	/**
	 * Apply a transfer an HTTP request asked for, as {@link #apply} does, and record its
	 * effect in {@code http_effects}, a table without a unique key like
	 * {@code transfer_effects}. Its event's value names the request ({@code http-<id>}).
	 * @return the source account's sequence number of the transfer's event
	 */
	long applyRequest(Transfer transfer, String idempotencyKey) {
		long sequence = move(transfer);
		UUID eventId = this.outbox.publish(EVENTS_TOPIC, String.valueOf(transfer.from()),
				"http-" + transfer.id() + "," + transfer.from() + "," + sequence);
		this.jdbc.update("""
				INSERT INTO http_effects (request_id, idempotency_key, event_id, account, seq, worker)
				VALUES (?, ?, ?, ?, ?, ?)""", transfer.id(), idempotencyKey, eventId, transfer.from(), sequence,
				this.worker);
		return sequence;
	}

	String worker() {
		return this.worker;
	}

	// the source account's new sequence number
	private long move(Transfer transfer) {
		// lock the two rows in id order, so that concurrent transfers never deadlock
		if (transfer.from() < transfer.to()) {
			long sequence = debit(transfer);
			credit(transfer);
			return sequence;
		}
		credit(transfer);
		return debit(transfer);
	}

	private long debit(Transfer transfer) {
		Long sequence = this.jdbc.queryForObject(
				"UPDATE accounts SET balance = balance - ?, events = events + 1 WHERE id = ? RETURNING events",
				Long.class, transfer.amount(), transfer.from());
		if (sequence == null) {
			throw new IllegalStateException("No account " + transfer.from());
		}
		return sequence;
	}

	private void credit(Transfer transfer) {
		int updated = this.jdbc.update("UPDATE accounts SET balance = balance + ? WHERE id = ?", transfer.amount(),
				transfer.to());
		if (updated != 1) {
			throw new IllegalStateException("No account " + transfer.to());
		}
	}

}
