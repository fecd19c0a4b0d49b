package dev.idempotency.sample;

import java.math.BigDecimal;
import java.util.Optional;
import java.util.UUID;

import dev.idempotency.outbox.Outbox;

import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Accepts payments: stores each one and, in the same transaction, publishes
 * {@link PaymentRequested} through the outbox. Called by an {@code @Idempotent} handler,
 * it joins the transaction of the request's claim: once per idempotency key.
 */
@Service
class PaymentService {

	static final String PAYMENTS_TOPIC = "payments";

	private final PaymentRepository payments;

	private final AccountRepository accounts;

	private final Outbox outbox;

	PaymentService(PaymentRepository payments, AccountRepository accounts, Outbox outbox) {
		this.payments = payments;
		this.accounts = accounts;
		this.outbox = outbox;
	}

	/**
	 * Request a payment.
	 * @param request the validated request
	 * @return the payment
	 * @throws InvalidPaymentException if the account does not exist or is in another
	 * currency
	 */
	@Transactional
	Payment request(PaymentRequest request) {
		Account account = this.accounts.findById(request.account())
			.orElseThrow(() -> InvalidPaymentException.unprocessable("unknown-account", "Unknown account",
					"Account '" + request.account() + "' does not exist"));
		if (!account.getCurrency().equals(request.currency())) {
			throw InvalidPaymentException.unprocessable("currency-mismatch", "Currency mismatch", "Account '"
					+ account.getId() + "' is in " + account.getCurrency() + ", not " + request.currency());
		}
		Payment payment = new Payment(account.getId(), request.amount(), request.currency());
		UUID eventId = this.outbox.publish(PAYMENTS_TOPIC, payment.getAccount(), new PaymentRequested(payment.getId(),
				payment.getAccount(), payment.getAmount(), payment.getCurrency()));
		payment.setEventId(eventId);
		// flushed here, so that a failed insert is the handler's exception, answered by the
		// application's exception handling, rather than a failure of the starter's commit
		return this.payments.saveAndFlush(payment);
	}

	/**
	 * Find a payment.
	 * @param id the payment id
	 * @return the payment, or empty if there is none with that id
	 */
	@Transactional(readOnly = true)
	Optional<Payment> find(UUID id) {
		return this.payments.findById(id);
	}

	/**
	 * A payment request, validated.
	 *
	 * @param account the account to debit
	 * @param amount the amount, positive, at most two decimals
	 * @param currency the ISO 4217 currency code
	 */
	record PaymentRequest(String account, BigDecimal amount, String currency) {
	}

}
