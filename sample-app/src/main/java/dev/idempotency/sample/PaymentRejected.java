package dev.idempotency.sample;

import java.math.BigDecimal;
import java.util.UUID;

/**
 * Event: a payment was refused, as it would have taken its account below zero.
 *
 * @param paymentId the payment
 * @param account the account
 * @param amount the amount
 * @param balance the balance of the account, which the amount exceeds
 * @param reason why the payment was refused
 */
record PaymentRejected(UUID paymentId, String account, BigDecimal amount, BigDecimal balance, String reason) {
}
