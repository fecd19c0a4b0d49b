package dev.idempotency.sample;

import java.math.BigDecimal;
import java.util.UUID;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/**
 * A line of an account statement, projected from {@code AccountDebited} events.
 */
@Entity
@Table(name = "statement_lines")
class StatementLine {

	@Id
	@GeneratedValue(strategy = GenerationType.IDENTITY)
	private Long id;

	private UUID paymentId;

	@Column(name = "account_id")
	private String account;

	private BigDecimal amount;

	private BigDecimal balanceAfter;

	protected StatementLine() {
	}

	StatementLine(UUID paymentId, String account, BigDecimal amount, BigDecimal balanceAfter) {
		this.paymentId = paymentId;
		this.account = account;
		this.amount = amount;
		this.balanceAfter = balanceAfter;
	}

}
