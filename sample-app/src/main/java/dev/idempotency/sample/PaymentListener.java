package dev.idempotency.sample;

import java.math.BigDecimal;

import dev.idempotency.Idempotent;
import dev.idempotency.outbox.Outbox;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Books each payment: debits its account, writes its ledger entry, marks it
 * {@code BOOKED} and publishes {@link AccountDebited}; or, when the debit would take the
 * account below zero, marks it {@code REJECTED} and publishes {@link PaymentRejected}.
 * {@code balance = balance - amount} is not idempotent by itself, and a refusal is an
 * effect too (a status, an event); {@code @Idempotent} makes either apply once per
 * payment, whatever Kafka redelivers, because the claim of the event id commits in the
 * same transaction as these writes.
 */
@Component
class PaymentListener {

	static final String ID = "ledger";

	static final String ACCOUNT_DEBITED_TOPIC = "account-debited";

	static final String PAYMENT_REJECTED_TOPIC = "payment-rejected";

	private final AccountRepository accounts;

	private final PaymentRepository payments;

	private final LedgerEntryRepository ledger;

	private final Outbox outbox;

	private final JsonMapper json;

	PaymentListener(AccountRepository accounts, PaymentRepository payments, LedgerEntryRepository ledger,
			Outbox outbox, JsonMapper json) {
		this.accounts = accounts;
		this.payments = payments;
		this.ledger = ledger;
		this.outbox = outbox;
		this.json = json;
	}

	// key: the X-Idempotency-Key header, the outbox event id
	@KafkaListener(id = ID, topics = PaymentService.PAYMENTS_TOPIC, groupId = "ledger")
	@Idempotent
	void onPayment(String message) {
		PaymentRequested payment = this.json.readValue(message, PaymentRequested.class);
		// the balance is checked by the debit itself, in one statement: no other debit of
		// the account can come between the check and the debit
		if (this.accounts.debit(payment.account(), payment.amount()) == 1) {
			book(payment);
		}
		else {
			reject(payment);
		}
	}

	private void book(PaymentRequested payment) {
		BigDecimal balance = account(payment).getBalance();
		this.ledger.save(new LedgerEntry(payment.paymentId(), payment.account(), payment.amount(), balance));
		payment(payment).book();
		this.outbox.publish(ACCOUNT_DEBITED_TOPIC, payment.account(),
				new AccountDebited(payment.paymentId(), payment.account(), payment.amount(), balance));
	}

	private void reject(PaymentRequested payment) {
		BigDecimal balance = account(payment).getBalance();
		String reason = "insufficient funds: account " + payment.account() + " holds " + balance + ", less than "
				+ payment.amount();
		payment(payment).reject(reason);
		this.outbox.publish(PAYMENT_REJECTED_TOPIC, payment.account(),
				new PaymentRejected(payment.paymentId(), payment.account(), payment.amount(), balance, reason));
	}

	private Account account(PaymentRequested payment) {
		return this.accounts.findById(payment.account())
			.orElseThrow(() -> new IllegalStateException("No account " + payment.account()));
	}

	private Payment payment(PaymentRequested payment) {
		return this.payments.findById(payment.paymentId())
			.orElseThrow(() -> new IllegalStateException("No payment " + payment.paymentId()));
	}

}
