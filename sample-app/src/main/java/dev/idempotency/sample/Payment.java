package dev.idempotency.sample;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.UUID;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/**
 * A payment as requested over HTTP.
 */
@Entity
@Table(name = "payments")
class Payment {

	@Id
	private UUID id;

	@Column(name = "account_id")
	private String account;

	private BigDecimal amount;

	private String currency;

	/** The id of the {@code PaymentRequested} event in the outbox. */
	private UUID eventId;

	@Column(insertable = false, updatable = false)
	private Instant createdAt;

	protected Payment() {
	}

	Payment(String account, BigDecimal amount, String currency) {
		this.id = UUID.randomUUID();
		this.account = account;
		this.amount = amount;
		this.currency = currency;
	}

	UUID getId() {
		return this.id;
	}

	String getAccount() {
		return this.account;
	}

	BigDecimal getAmount() {
		return this.amount;
	}

	String getCurrency() {
		return this.currency;
	}

	UUID getEventId() {
		return this.eventId;
	}

	void setEventId(UUID eventId) {
		this.eventId = eventId;
	}

}
