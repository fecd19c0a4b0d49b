package dev.idempotency.sample;

import java.math.BigDecimal;

import dev.idempotency.Idempotent;
import dev.idempotency.outbox.Outbox;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Debits the account of each payment, writes its ledger entry and publishes
 * {@link AccountDebited}. {@code balance = balance - amount} is not idempotent by itself;
 * {@code @Idempotent} makes each payment apply once, whatever Kafka redelivers, because
 * the claim of the event id commits in the same transaction as these three writes.
 */
@Component
class PaymentListener {

	static final String ID = "ledger";

	static final String ACCOUNT_DEBITED_TOPIC = "account-debited";

	private final AccountRepository accounts;

	private final LedgerEntryRepository ledger;

	private final Outbox outbox;

	private final JsonMapper json;

	PaymentListener(AccountRepository accounts, LedgerEntryRepository ledger, Outbox outbox, JsonMapper json) {
		this.accounts = accounts;
		this.ledger = ledger;
		this.outbox = outbox;
		this.json = json;
	}

	// key: the X-Idempotency-Key header, the outbox event id
	@KafkaListener(id = ID, topics = PaymentService.PAYMENTS_TOPIC, groupId = "ledger")
	@Idempotent
	void onPayment(String message) {
		PaymentRequested payment = this.json.readValue(message, PaymentRequested.class);
		if (this.accounts.debit(payment.account(), payment.amount()) != 1) {
			throw new IllegalStateException("No account " + payment.account());
		}
		BigDecimal balance = this.accounts.findById(payment.account()).orElseThrow().getBalance();
		this.ledger.save(new LedgerEntry(payment.paymentId(), payment.account(), payment.amount(), balance));
		this.outbox.publish(ACCOUNT_DEBITED_TOPIC, payment.account(),
				new AccountDebited(payment.paymentId(), payment.account(), payment.amount(), balance));
	}

}
