package dev.idempotency.reliability;

import java.nio.file.Path;

import javax.sql.DataSource;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * The application of the HTTP crash tests: a checkout service with two {@code @Idempotent}
 * Spring MVC handlers, one per mode ({@link Checkout}), on PostgreSQL. It needs no Kafka
 * broker: no listener, and the outbox relay is switched off by the process that starts it.
 * Redis, on the module's class path for the workload, is left out.
 */
@SpringBootConfiguration
@EnableAutoConfiguration(excludeName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
public class CheckoutApplication {

	public static void main(String[] args) {
		SpringApplication.run(CheckoutApplication.class, args);
	}

	@Bean
	Checkout checkout(JdbcTemplate jdbc, PaymentProvider provider, PlatformTransactionManager transactionManager,
			@Value("${checkout.hold-directory}") Path holds) {
		return new Checkout(jdbc, provider, transactionManager, holds);
	}

	@Bean
	PaymentProvider paymentProvider(DataSource dataSource) {
		return new PaymentProvider(dataSource);
	}

}
