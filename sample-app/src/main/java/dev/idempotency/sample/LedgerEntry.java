package dev.idempotency.sample;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.UUID;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/**
 * One debit of an account, written by the payments listener.
 */
@Entity
@Table(name = "ledger_entries")
class LedgerEntry {

	@Id
	@GeneratedValue(strategy = GenerationType.IDENTITY)
	private Long id;

	private UUID paymentId;

	@Column(name = "account_id")
	private String account;

	private BigDecimal amount;

	private BigDecimal balanceAfter;

	@Column(insertable = false, updatable = false)
	private Instant bookedAt;

	protected LedgerEntry() {
	}

	LedgerEntry(UUID paymentId, String account, BigDecimal amount, BigDecimal balanceAfter) {
		this.paymentId = paymentId;
		this.account = account;
		this.amount = amount;
		this.balanceAfter = balanceAfter;
	}

	Long getId() {
		return this.id;
	}

	UUID getPaymentId() {
		return this.paymentId;
	}

	String getAccount() {
		return this.account;
	}

	BigDecimal getAmount() {
		return this.amount;
	}

	BigDecimal getBalanceAfter() {
		return this.balanceAfter;
	}

	Instant getBookedAt() {
		return this.bookedAt;
	}

}
