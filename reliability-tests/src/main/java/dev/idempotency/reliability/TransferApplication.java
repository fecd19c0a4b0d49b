package dev.idempotency.reliability;

import dev.idempotency.outbox.Outbox;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

/**
 * The workload: a ledger service that uses the starter as an application would. It
 * applies transfers from the {@code transfers} topic, publishes one event per transfer
 * through the outbox and runs the relay; the Redis cache is on. Business failures are
 * retried three times and dead-lettered to {@code transfers.DLT}. With
 * {@code workload.idempotent=false} the listener has no {@code @Idempotent}: the negative
 * control.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class TransferApplication {

	public static void main(String[] args) {
		SpringApplication application = new SpringApplication(TransferApplication.class);
		// Spring MVC is on the class path for the checkout application; the workload serves
		// no HTTP, and its processes must not compete for a port
		application.setWebApplicationType(WebApplicationType.NONE);
		application.run(args);
	}

	@Bean
	Ledger ledger(JdbcTemplate jdbc, Outbox outbox, @Value("${workload.worker:worker}") String worker) {
		return new Ledger(jdbc, outbox, worker);
	}

	@Bean
	@ConditionalOnProperty(name = "workload.idempotent", havingValue = "true", matchIfMissing = true)
	TransferListeners.IdempotentTransfers idempotentTransfers(Ledger ledger) {
		return new TransferListeners.IdempotentTransfers(ledger);
	}

	@Bean
	@ConditionalOnProperty(name = "workload.idempotent", havingValue = "false")
	TransferListeners.PlainTransfers plainTransfers(Ledger ledger) {
		return new TransferListeners.PlainTransfers(ledger);
	}

	@Bean
	DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
		return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template), new FixedBackOff(200, 3));
	}

}
