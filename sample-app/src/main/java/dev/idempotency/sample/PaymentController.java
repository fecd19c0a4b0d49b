package dev.idempotency.sample;

import java.math.BigDecimal;
import java.net.URI;
import java.util.UUID;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.idempotency.Idempotent;
import dev.idempotency.sample.PaymentService.PaymentRequest;
import org.jspecify.annotations.Nullable;

import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.ErrorResponseException;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /payments}: a payment per {@code Idempotency-Key}. The starter's
 * {@code @Idempotent} claims the key, runs the handler and stores its response in one
 * transaction; a retried request gets the stored response, marked
 * {@code Idempotent-Replayed: true}, and creates nothing. {@code GET /payments/{id}}: the
 * payment as it stands now ({@code PENDING}, {@code BOOKED} or {@code REJECTED}).
 */
@RestController
class PaymentController {

	static final String IDEMPOTENCY_KEY = "Idempotency-Key";

	private final PaymentService payments;

	PaymentController(PaymentService payments) {
		this.payments = payments;
	}

	// a refusal is an exception, which the starter does not store: its work (none) rolls
	// back, the key is free again and a retry with the same key is validated again
	@PostMapping("/payments")
	@Idempotent
	ResponseEntity<PaymentView> create(@RequestBody PaymentBody body) {
		Payment payment = this.payments.request(validate(body));
		return ResponseEntity.created(URI.create("/payments/" + payment.getId())).body(PaymentView.of(payment));
	}

	// the stored response of POST says PENDING, as it did then; this is the status now
	@GetMapping("/payments/{id}")
	PaymentView payment(@PathVariable UUID id) {
		return this.payments.find(id)
			.map(PaymentView::of)
			.orElseThrow(() -> new ErrorResponseException(HttpStatus.NOT_FOUND,
					ProblemDetail.forStatusAndDetail(HttpStatus.NOT_FOUND, "Payment " + id + " does not exist"), null));
	}

	private static PaymentRequest validate(PaymentBody body) {
		if (body.account() == null || body.account().isBlank()) {
			throw InvalidPaymentException.badRequest("account is required");
		}
		BigDecimal amount = body.amount();
		if (amount == null) {
			throw InvalidPaymentException.badRequest("amount is required");
		}
		if (amount.signum() <= 0) {
			throw InvalidPaymentException.badRequest("amount must be positive");
		}
		// digits before the point: precision - scale (1e20 has a precision of 1, a scale of -20)
		if (amount.stripTrailingZeros().scale() > 2 || (long) amount.precision() - amount.scale() > 15) {
			throw InvalidPaymentException
				.badRequest("amount must have at most 15 digits before the decimal point and 2 after it");
		}
		if (body.currency() == null || !body.currency().matches("[A-Z]{3}")) {
			throw InvalidPaymentException.badRequest("currency must be an ISO 4217 code such as EUR");
		}
		return new PaymentRequest(body.account(), amount, body.currency());
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
	 * @param status where the payment stands
	 * @param reason why it was rejected, absent unless it was
	 */
	record PaymentView(UUID id, String account, BigDecimal amount, String currency, Payment.Status status,
			@JsonInclude(JsonInclude.Include.NON_NULL) @Nullable String reason) {

		static PaymentView of(Payment payment) {
			return new PaymentView(payment.getId(), payment.getAccount(), payment.getAmount(), payment.getCurrency(),
					payment.getStatus(), payment.getReason());
		}

	}

}
