package dev.idempotency.reliability;

import dev.idempotency.Idempotent;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.transaction.annotation.Transactional;

/**
 * The workload's listener, in two variants that differ only in {@code @Idempotent}: the
 * one under test, and the negative control that the checker must catch.
 */
final class TransferListeners {

	static final String TOPIC = "transfers";

	static final String GROUP = "ledger";

	private TransferListeners() {
	}

	static class IdempotentTransfers {

		private final Ledger ledger;

		IdempotentTransfers(Ledger ledger) {
			this.ledger = ledger;
		}

		@KafkaListener(id = "transfers", topics = TOPIC, groupId = GROUP)
		@Idempotent
		public void on(String transfer) {
			this.ledger.apply(Transfer.parse(transfer));
		}

	}

	static class PlainTransfers {

		private final Ledger ledger;

		PlainTransfers(Ledger ledger) {
			this.ledger = ledger;
		}

		@KafkaListener(id = "transfers", topics = TOPIC, groupId = GROUP)
		@Transactional
		public void on(String transfer) {
			this.ledger.apply(Transfer.parse(transfer));
		}

	}

}
