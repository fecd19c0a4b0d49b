package dev.idempotency.sample;

import dev.idempotency.Idempotent;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Debits an account for each payment. {@code balance = balance - amount} is not
 * idempotent by itself; {@code @Idempotent} makes each payment apply once.
 */
@Component
class LedgerListener {

	private final JdbcTemplate jdbc;

	LedgerListener(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	// payload: "<account>:<amount in cents>"; key: the X-Idempotency-Key header
	@KafkaListener(topics = "payments", groupId = "ledger")
	@Idempotent
	void onPayment(String payment) {
		String[] parts = payment.split(":");
		this.jdbc.update("UPDATE accounts SET balance = balance - ? WHERE id = ?", Long.parseLong(parts[1]),
				parts[0]);
	}

}
