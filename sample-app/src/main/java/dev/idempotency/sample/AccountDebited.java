package dev.idempotency.sample;

import java.math.BigDecimal;
import java.util.UUID;

/**
 * Event: an account was debited for a payment.
 *
 * @param paymentId the payment
 * @param account the account
 * @param amount the amount
 * @param balanceAfter the balance after the debit
 */
record AccountDebited(UUID paymentId, String account, BigDecimal amount, BigDecimal balanceAfter) {
}
