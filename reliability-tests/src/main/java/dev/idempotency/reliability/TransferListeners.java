package dev.idempotency.reliability;

import java.util.List;

import dev.idempotency.Idempotent;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.transaction.annotation.Transactional;

/**
 * The workload's transfer listeners, record at a time on {@code transfers} and in batches
 * on {@code transfers-batch}, each in two variants that differ only in
 * {@code @Idempotent}: the one under test, and the negative control that the checker must
 * catch.
 */
final class TransferListeners {

	static final String TOPIC = "transfers";

	static final String GROUP = "ledger";

	static final String BATCH_TOPIC = "transfers-batch";

	static final String BATCH_GROUP = "ledger-batch";

	/**
	 * Return the topic of a transfer: every fifth goes to the batch listener when it runs.
	 * @param transfer the transfer's id
	 * @param batch whether the batch listener runs
	 * @return the topic the producer sends it to
	 */
	static String topic(long transfer, boolean batch) {
		return (batch && transfer % 5 == 4) ? BATCH_TOPIC : TOPIC;
	}

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

	static class IdempotentBatches {

		private final Ledger ledger;

		IdempotentBatches(Ledger ledger) {
			this.ledger = ledger;
		}

		@KafkaListener(id = "transfers-batch", topics = BATCH_TOPIC, groupId = BATCH_GROUP, batch = "true")
		@Idempotent
		public void on(List<String> transfers) {
			this.ledger.applyAll(transfers.stream().map(Transfer::parse).toList());
		}

	}

	static class PlainBatches {

		private final Ledger ledger;

		PlainBatches(Ledger ledger) {
			this.ledger = ledger;
		}

		@KafkaListener(id = "transfers-batch", topics = BATCH_TOPIC, groupId = BATCH_GROUP, batch = "true")
		@Transactional
		public void on(List<String> transfers) {
			this.ledger.applyAll(transfers.stream().map(Transfer::parse).toList());
		}

	}

}
