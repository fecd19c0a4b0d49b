package dev.idempotency.sample;

import java.math.BigDecimal;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/**
 * An account, debited by payments.
 */
@Entity
@Table(name = "accounts")
class Account {

	@Id
	private String id;

	private String currency;

	private BigDecimal openingBalance;

	private BigDecimal balance;

	protected Account() {
	}

	String getId() {
		return this.id;
	}

	String getCurrency() {
		return this.currency;
	}

	BigDecimal getOpeningBalance() {
		return this.openingBalance;
	}

	BigDecimal getBalance() {
		return this.balance;
	}

}
