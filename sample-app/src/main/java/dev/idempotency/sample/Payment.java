package dev.idempotency.sample;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.UUID;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.EnumType;
import jakarta.persistence.Enumerated;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import org.jspecify.annotations.Nullable;

/**
 * A payment as requested over HTTP, {@link Status#PENDING} until the ledger books or
 * rejects it.
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

	@Enumerated(EnumType.STRING)
	private Status status = Status.PENDING;

	private @Nullable String reason;

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

	Status getStatus() {
		return this.status;
	}

	/**
	 * Return why the payment was rejected.
	 * @return the reason, or {@code null} unless it was rejected
	 */
	@Nullable String getReason() {
		return this.reason;
	}

	/**
	 * Record that the ledger debited the account.
	 */
	void book() {
		decide(Status.BOOKED, null);
	}

	/**
	 * Record that the ledger refused the payment.
	 * @param reason why
	 */
	void reject(String reason) {
		decide(Status.REJECTED, reason);
	}

	private void decide(Status status, @Nullable String reason) {
		if (this.status != Status.PENDING) {
			throw new IllegalStateException("Payment " + this.id + " is " + this.status + " already");
		}
		this.status = status;
		this.reason = reason;
	}

	/**
	 * Where a payment stands.
	 */
	enum Status {

		/** Accepted, not booked yet. */
		PENDING,

		/** The account was debited. */
		BOOKED,

		/** Refused: the account holds less than the amount. */
		REJECTED

	}

}
