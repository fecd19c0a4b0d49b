package dev.idempotency.sample;

import org.apache.kafka.clients.admin.NewTopic;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.config.TopicBuilder;

/**
 * A payments ledger that debits accounts exactly once per payment, whatever Kafka
 * redelivers.
 * <p>
 * Without configured servers it starts embedded ones (see {@link EmbeddedServersListener});
 * with {@code --demo} it sends payments with injected duplicates, prints a verdict and
 * exits (see {@link Demo}).
 */
@SpringBootApplication
public class PaymentsLedgerApplication {

	public static void main(String[] args) {
		SpringApplication.run(PaymentsLedgerApplication.class, args);
	}

	@Bean
	NewTopic paymentsTopic(@Value("${sample.topics.partitions:3}") int partitions) {
		return TopicBuilder.name(PaymentService.PAYMENTS_TOPIC).partitions(partitions).replicas(1).build();
	}

	@Bean
	NewTopic accountDebitedTopic(@Value("${sample.topics.partitions:3}") int partitions) {
		return TopicBuilder.name(PaymentListener.ACCOUNT_DEBITED_TOPIC).partitions(partitions).replicas(1).build();
	}

}
