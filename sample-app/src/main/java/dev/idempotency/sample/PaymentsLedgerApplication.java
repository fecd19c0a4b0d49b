package dev.idempotency.sample;

import java.time.Duration;

import io.lettuce.core.resource.Delay;
import org.apache.kafka.clients.admin.NewTopic;
import sun.misc.Signal;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.data.redis.autoconfigure.ClientResourcesBuilderCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.config.TopicBuilder;

/**
 * A payments ledger that debits accounts exactly once per payment, whatever Kafka
 * redelivers.
 * <p>
 * Without configured servers it starts embedded ones (see {@link EmbeddedServersListener});
 * with {@code --demo} it sends payments with injected duplicates, prints a verdict and
 * exits (see {@link Demo}). A SIGTERM or a Ctrl-C stops it gracefully.
 */
@SpringBootApplication
public class PaymentsLedgerApplication {

	public static void main(String[] args) {
		exitZeroOnSigterm();
		SpringApplication.run(PaymentsLedgerApplication.class, args);
	}

	// A SIGTERM asks the application to stop: the JVM runs its shutdown hooks (Spring Boot's
	// closes the context) as it does by default, but exits with 0 instead of 143, which
	// spring-boot:run reports as a failure (it takes Ctrl-C's 130 as a normal end)
	private static void exitZeroOnSigterm() {
		try {
			Signal.handle(new Signal("TERM"), (signal) -> System.exit(0));
		}
		catch (IllegalArgumentException ex) {
			// the JVM does not let the application handle SIGTERM here: it exits with 143
		}
	}

	// Lettuce's default reconnect backoff grows to 30 s; a Redis that comes back is used
	// again within a second
	@Bean
	ClientResourcesBuilderCustomizer redisReconnectDelay() {
		return (builder) -> builder.reconnectDelay(Delay.constant(Duration.ofMillis(500)));
	}

	@Bean
	NewTopic paymentsTopic(@Value("${sample.topics.partitions:3}") int partitions) {
		return TopicBuilder.name(PaymentService.PAYMENTS_TOPIC).partitions(partitions).replicas(1).build();
	}

	@Bean
	NewTopic accountDebitedTopic(@Value("${sample.topics.partitions:3}") int partitions) {
		return TopicBuilder.name(PaymentListener.ACCOUNT_DEBITED_TOPIC).partitions(partitions).replicas(1).build();
	}

	@Bean
	NewTopic paymentRejectedTopic(@Value("${sample.topics.partitions:3}") int partitions) {
		return TopicBuilder.name(PaymentListener.PAYMENT_REJECTED_TOPIC).partitions(partitions).replicas(1).build();
	}

}
