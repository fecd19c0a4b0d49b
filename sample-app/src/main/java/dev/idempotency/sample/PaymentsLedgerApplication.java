package dev.idempotency.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A payments ledger that debits accounts exactly once per payment, whatever Kafka
 * redelivers.
 */
@SpringBootApplication
public class PaymentsLedgerApplication {

	public static void main(String[] args) {
		SpringApplication.run(PaymentsLedgerApplication.class, args);
	}

}
