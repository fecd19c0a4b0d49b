package dev.idempotency.sample;

import java.math.BigDecimal;
import java.util.UUID;

import dev.idempotency.sample.PaymentService.Accepted;
import dev.idempotency.sample.PaymentService.PaymentRequest;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /payments}: a payment per {@code Idempotency-Key}; a repeated request gets
 * the first response.
 */
@RestController
class PaymentController {

	static final String IDEMPOTENCY_KEY = "Idempotency-Key";

	static final int MAX_KEY_LENGTH = 200;

	private final PaymentService payments;

	PaymentController(PaymentService payments) {
		this.payments = payments;
	}

	@PostMapping("/payments")
	ResponseEntity<PaymentView> create(@RequestHeader(IDEMPOTENCY_KEY) String key,
			@RequestBody PaymentBody body) {
		PaymentRequest request = validate(key, body);
		Accepted accepted;
		try {
			accepted = this.payments.request(key, request);
		}
		catch (DataIntegrityViolationException ex) {
			// a concurrent request with the same key committed first: answer as it did
			accepted = this.payments.request(key, request);
		}
		return ResponseEntity.status(HttpStatus.CREATED)
			.header("Idempotent-Replayed", String.valueOf(accepted.replayed()))
			.body(PaymentView.of(accepted.payment()));
	}

	private static PaymentRequest validate(String key, PaymentBody body) {
		if (key.isBlank() || key.length() > MAX_KEY_LENGTH) {
			throw InvalidPaymentException
				.badRequest(IDEMPOTENCY_KEY + " must have 1 to " + MAX_KEY_LENGTH + " characters");
		}
		if (body.account() == null || body.account().isBlank()) {
			throw InvalidPaymentException.badRequest("account is required");
		}
		if (body.amount() == null) {
			throw InvalidPaymentException.badRequest("amount is required");
		}
		if (body.amount().signum() <= 0) {
			throw InvalidPaymentException.badRequest("amount must be positive");
		}
		if (body.amount().stripTrailingZeros().scale() > 2 || body.amount().precision() > 17) {
			throw InvalidPaymentException.badRequest("amount must have at most 15 digits and 2 decimals");
		}
		if (body.currency() == null || !body.currency().matches("[A-Z]{3}")) {
			throw InvalidPaymentException.badRequest("currency must be an ISO 4217 code such as EUR");
		}
		return new PaymentRequest(body.account(), body.amount(), body.currency());
	}

	/**
	 * The JSON body of {@code POST /payments}, as sent.
	 *
	 * @param account the account to debit
	 * @param amount the amount
	 * @param currency the currency
	 */
	record PaymentBody(@Nullable String account, @Nullable BigDecimal amount, @Nullable String currency) {
	}

	/**
	 * A payment, as answered.
	 *
	 * @param id the payment id
	 * @param account the account
	 * @param amount the amount
	 * @param currency the currency
	 */
	record PaymentView(UUID id, String account, BigDecimal amount, String currency) {

		static PaymentView of(Payment payment) {
			return new PaymentView(payment.getId(), payment.getAccount(), payment.getAmount(), payment.getCurrency());
		}

	}

}
