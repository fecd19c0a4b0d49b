package dev.idempotency.internal.consumer;

import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.transaction.KafkaTransactionManager;
import org.springframework.util.backoff.ExponentialBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The installer warns when the infrastructure back-off of a Kafka-transactional container
 * can outlast the producer's transaction timeout: the wait runs inside the transaction,
 * which the broker would abort.
 */
@ExtendWith(OutputCaptureExtension.class)
class InfrastructureRetryInstallerUnitTests {

	@Test
	void warnsWhenTheBackOffCanOutlastTheTransactionTimeout(CapturedOutput output) {
		install(container("tx-timeout-short", Map.of(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 20_000)), 30_000);
		assertThat(output).contains("tx-timeout-short")
			.contains("idempotency.infrastructure-retry.max-interval (30000 ms)")
			.contains("transaction.timeout.ms (20000 ms)");
	}

	@Test
	void warnsAgainstTheProducersDefaultTransactionTimeout(CapturedOutput output) {
		install(container("tx-timeout-default", Map.of()), 60_000);
		assertThat(output).contains("tx-timeout-default").contains("transaction.timeout.ms (60000 ms)");
	}

	@Test
	void staysQuietWhenTheBackOffEndsWellWithinTheTransactionTimeout(CapturedOutput output) {
		install(container("tx-timeout-fine", Map.of()), 30_000);
		install(new KafkaMessageListenerContainer<>(new DefaultKafkaConsumerFactory<>(Map.of()), properties(null)),
				120_000);
		assertThat(output).doesNotContain("transaction.timeout.ms");
	}

	private static void install(KafkaMessageListenerContainer<String, String> container, long maxInterval) {
		DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
		InfrastructureRetryInstaller installer = new InfrastructureRetryInstaller(
				beans.getBeanProvider(KafkaListenerEndpointRegistry.class), () -> {
					ExponentialBackOff backOff = new ExponentialBackOff(1000, 2);
					backOff.setMaxInterval(maxInterval);
					return backOff;
				});
		installer.install(container);
	}

	private static KafkaMessageListenerContainer<String, String> container(String id, Map<String, Object> producer) {
		DefaultKafkaProducerFactory<String, String> producers = new DefaultKafkaProducerFactory<>(
				new HashMap<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9", "key.serializer",
						StringSerializer.class, "value.serializer", StringSerializer.class)));
		producers.updateConfigs(producer);
		producers.setTransactionIdPrefix("tx-");
		KafkaMessageListenerContainer<String, String> container = new KafkaMessageListenerContainer<>(
				new DefaultKafkaConsumerFactory<>(Map.of()), properties(new KafkaTransactionManager<>(producers)));
		container.setBeanName(id);
		return container;
	}

	private static ContainerProperties properties(KafkaTransactionManager<String, String> transactions) {
		ContainerProperties properties = new ContainerProperties("topic");
		properties.setMessageListener((MessageListener<String, String>) (record) -> {
		});
		properties.setKafkaAwareTransactionManager(transactions);
		return properties;
	}

}
