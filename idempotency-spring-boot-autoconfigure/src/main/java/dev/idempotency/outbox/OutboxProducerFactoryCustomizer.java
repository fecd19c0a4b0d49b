package dev.idempotency.outbox;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;

/**
 * Customizes the producer factory of the outbox relay before the relay uses it, as Spring
 * Boot's own {@code DefaultKafkaProducerFactoryCustomizer} does for the application's
 * producer factory. The factory starts from the application's producer settings, made
 * idempotent with {@code acks=all}; customizers run in their {@code @Order}.
 * <p>
 * Keep the producer idempotent: the relay's per-key order relies on it.
 */
@FunctionalInterface
public interface OutboxProducerFactoryCustomizer {

	/**
	 * Customize the relay's producer factory.
	 * @param producerFactory the factory
	 */
	void customize(DefaultKafkaProducerFactory<String, byte[]> producerFactory);

}
