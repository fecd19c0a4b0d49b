package dev.idempotency.sample;

import java.math.BigDecimal;
import java.util.UUID;

/**
 * Event: a payment was accepted and its account is to be debited.
 *
 * @param paymentId the payment
 * @param account the account to debit
 * @param amount the amount
 * @param currency the currency
 */
record PaymentRequested(UUID paymentId, String account, BigDecimal amount, String currency) {
}
