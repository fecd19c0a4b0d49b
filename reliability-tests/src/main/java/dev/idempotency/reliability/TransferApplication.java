package dev.idempotency.reliability;

import java.util.List;

import javax.sql.DataSource;

import dev.idempotency.LeaseLostHandler;
import dev.idempotency.outbox.Outbox;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
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
 * {@code workload.batch=true} it also applies transfers in batches from
 * {@code transfers-batch}, and with {@code workload.lease=true} it charges payments from
 * {@code payments} at a payment provider in lease mode ({@link PaymentListeners}); with
 * {@code workload.http=true} it serves {@code POST /transfers} on {@code server.port}
 * ({@link HttpTransfers}). With {@code workload.idempotent=false} the listeners and the
 * handler have no {@code @Idempotent}: the negative control; {@code workload.fencing=false}
 * turns the provider's fence off.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class TransferApplication {

	public static void main(String[] args) {
		SpringApplication application = new SpringApplication(TransferApplication.class);
		// Spring MVC is on the class path for the checkout application; without the HTTP
		// handler the workload serves no HTTP, and its processes must not compete for a port
		if (!List.of(args).contains("--workload.http=true")) {
			application.setWebApplicationType(WebApplicationType.NONE);
		}
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
	@ConditionalOnProperty(name = { "workload.batch", "workload.idempotent" }, havingValue = "true")
	TransferListeners.IdempotentBatches idempotentBatches(Ledger ledger) {
		return new TransferListeners.IdempotentBatches(ledger);
	}

	@Bean
	@ConditionalOnExpression("${workload.batch:false} and !${workload.idempotent:true}")
	TransferListeners.PlainBatches plainBatches(Ledger ledger) {
		return new TransferListeners.PlainBatches(ledger);
	}

	@Bean
	@ConditionalOnProperty(name = { "workload.http", "workload.idempotent" }, havingValue = "true")
	HttpTransfers.IdempotentHandler idempotentHttpTransfers(Ledger ledger) {
		return new HttpTransfers.IdempotentHandler(ledger);
	}

	@Bean
	@ConditionalOnExpression("${workload.http:false} and !${workload.idempotent:true}")
	HttpTransfers.PlainHandler plainHttpTransfers(Ledger ledger) {
		return new HttpTransfers.PlainHandler(ledger);
	}

	@Bean
	@ConditionalOnProperty(name = "workload.lease", havingValue = "true")
	ChargeStore chargeStore(DataSource dataSource, @Value("${workload.worker:worker}") String worker,
			@Value("${workload.fencing:true}") boolean fencing) {
		return new ChargeStore(dataSource, worker, fencing);
	}

	@Bean
	@ConditionalOnProperty(name = { "workload.lease", "workload.idempotent" }, havingValue = "true")
	PaymentListeners.IdempotentPayments idempotentPayments(ChargeStore provider) {
		return new PaymentListeners.IdempotentPayments(provider);
	}

	@Bean
	@ConditionalOnExpression("${workload.lease:false} and !${workload.idempotent:true}")
	PaymentListeners.PlainPayments plainPayments(ChargeStore provider) {
		return new PaymentListeners.PlainPayments(provider);
	}

	// what an application would alert on: the paused consumer's late completion
	@Bean
	LeaseLostHandler logLostLease() {
		return (lost) -> LoggerFactory.getLogger(TransferApplication.class)
			.warn("Lease lost: {} with fencing token {} at {}-{}@{}", lost.key(), lost.fencingToken(), lost.topic(),
					lost.partition(), lost.offset());
	}

	@Bean
	DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
		return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template), new FixedBackOff(200, 3));
	}

}
