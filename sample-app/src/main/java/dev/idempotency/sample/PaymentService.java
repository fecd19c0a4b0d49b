package dev.idempotency.sample;

import java.math.BigDecimal;
import java.util.Optional;
import java.util.UUID;

import dev.idempotency.outbox.Outbox;

import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Accepts payments: stores each one once per idempotency key and, in the same
 * transaction, publishes {@link PaymentRequested} through the outbox.
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
	 * Request a payment. A request whose key was seen gets the payment created then, and
	 * creates nothing.
	 * @param key the request's idempotency key
	 * @param request the validated request
	 * @return the payment, and whether it existed already
	 */
	@Transactional
	Accepted request(String key, PaymentRequest request) {
		Optional<Payment> existing = this.payments.findByIdempotencyKey(key);
		if (existing.isPresent()) {
			return new Accepted(sameRequest(existing.get(), request), true);
		}
		Account account = this.accounts.findById(request.account())
			.orElseThrow(() -> InvalidPaymentException.unprocessable("unknown-account", "Unknown account",
					"Account '" + request.account() + "' does not exist"));
		if (!account.getCurrency().equals(request.currency())) {
			throw InvalidPaymentException.unprocessable("currency-mismatch", "Currency mismatch", "Account '"
					+ account.getId() + "' is in " + account.getCurrency() + ", not " + request.currency());
		}
		Payment payment = new Payment(key, account.getId(), request.amount(), request.currency());
		UUID eventId = this.outbox.publish(PAYMENTS_TOPIC, payment.getAccount(), new PaymentRequested(payment.getId(),
				payment.getAccount(), payment.getAmount(), payment.getCurrency()));
		payment.setEventId(eventId);
		// flushed here so that a concurrent request with the same key fails on the unique
		// constraint now, rolling back the outbox event with it
		this.payments.saveAndFlush(payment);
		return new Accepted(payment, false);
	}

	private static Payment sameRequest(Payment payment, PaymentRequest request) {
		boolean same = payment.getAccount().equals(request.account())
				&& payment.getAmount().compareTo(request.amount()) == 0
				&& payment.getCurrency().equals(request.currency());
		if (!same) {
			throw InvalidPaymentException.unprocessable("idempotency-key-reused", "Idempotency-Key reused",
					"The Idempotency-Key was used for a different payment request");
		}
		return payment;
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

	/**
	 * An accepted payment.
	 *
	 * @param payment the payment
	 * @param replayed whether an earlier request with the same key created it
	 */
	record Accepted(Payment payment, boolean replayed) {
	}

}
