package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A record without key under {@code missing-key: reject} in the same batch as a
 * listener's own failure or nack: every record is applied once or reaches the
 * recoverer, whichever comes first in the batch.
 */
class BatchFailureInterplayIntegrationTests {

	private static final String FAILED = "it-interplay-failed";

	private static final String NACKED = "it-interplay-nacked";

	@Test
	void recordWithoutKeyBeforeAFailedOneReachesTheRecoverer() {
		TestInfrastructure.createTopic(FAILED, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.missing-key=reject")) {
			String run = UUID.randomUUID().toString();
			TestKafka.send(FAILED, 0, run + "-no-key", Map.of());
			TestKafka.send(FAILED, 0, run + "-poison", Map.of("X-Idempotency-Key", run + "-poison"));
			TestKafka.send(FAILED, 0, run + "-good", Map.of("X-Idempotency-Key", run + "-good"));
			context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("interplay-failed").start();
			TestKafka.awaitCommitted("interplay-failed", new TopicPartition(FAILED, 0), Duration.ofSeconds(30));
			Listeners listeners = context.getBean(Listeners.class);
			assertThat(listeners.recovered()).containsExactly(run + "-no-key", run + "-poison");
			assertThat(listeners.exceptions().get(0)).isInstanceOf(IdempotencyKeyMissingException.class);
			assertThat(effects(context, run + "-good")).isEqualTo(1);
		}
	}

	@Test
	void nackBeforeARecordWithoutKeyHandsTheRecordsBackFromTheNack() {
		TestInfrastructure.createTopic(NACKED, 1);
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"idempotency.missing-key=reject", "spring.kafka.listener.ack-mode=manual",
				"spring.kafka.listener.poll-timeout=200ms")) {
			String run = UUID.randomUUID().toString();
			Listeners listeners = context.getBean(Listeners.class);
			listeners.nackOnce(run + "-b");
			TestKafka.send(NACKED, 0, run + "-a", Map.of("X-Idempotency-Key", run + "-a"));
			TestKafka.send(NACKED, 0, run + "-b", Map.of("X-Idempotency-Key", run + "-b"));
			TestKafka.send(NACKED, 0, run + "-no-key", Map.of());
			context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("interplay-nacked").start();
			TestKafka.awaitCommitted("interplay-nacked", new TopicPartition(NACKED, 0), Duration.ofSeconds(30));
			assertThat(effects(context, run + "-a")).isEqualTo(1);
			assertThat(effects(context, run + "-b")).isEqualTo(1);
			assertThat(listeners.recovered()).containsExactly(run + "-no-key");
		}
	}

	private static int effects(ConfigurableApplicationContext context, String value) {
		return context.getBean(JdbcTemplate.class)
			.queryForObject("SELECT count(*) FROM interplay_effects WHERE message = ?", Integer.class, value);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listeners listeners(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS interplay_effects (id BIGSERIAL PRIMARY KEY, "
					+ "message TEXT NOT NULL)");
			return new Listeners(jdbc);
		}

		@Bean
		DefaultErrorHandler errorHandler(Listeners listeners) {
			return new DefaultErrorHandler(listeners::recover, new FixedBackOff(0, 1));
		}

	}

	static class Listeners {

		private final List<String> recovered = new CopyOnWriteArrayList<>();

		private final List<Throwable> exceptions = new CopyOnWriteArrayList<>();

		private final Set<String> nackOnce = ConcurrentHashMap.newKeySet();

		private final JdbcTemplate jdbc;

		Listeners(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "interplay-failed", topics = FAILED, groupId = "interplay-failed", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void failing(List<ConsumerRecord<String, String>> records) {
			for (int i = 0; i < records.size(); i++) {
				if (records.get(i).value().endsWith("-poison")) {
					throw new BatchListenerFailedException("Poison", i);
				}
				insert(records.get(i).value());
			}
		}

		@KafkaListener(id = "interplay-nacked", topics = NACKED, groupId = "interplay-nacked", batch = "true",
				autoStartup = "false")
		@Idempotent
		public void nacking(List<ConsumerRecord<String, String>> records, Acknowledgment acknowledgment) {
			for (int i = 0; i < records.size(); i++) {
				if (this.nackOnce.remove(records.get(i).value())) {
					acknowledgment.nack(i, Duration.ofMillis(10));
					return;
				}
				insert(records.get(i).value());
			}
			acknowledgment.acknowledge();
		}

		private void insert(String value) {
			this.jdbc.update("INSERT INTO interplay_effects (message) VALUES (?)", value);
		}

		public void nackOnce(String value) {
			this.nackOnce.add(value);
		}

		public void recover(ConsumerRecord<?, ?> record, Exception ex) {
			this.recovered.add((String) record.value());
			this.exceptions.add(NestedExceptionUtils.getMostSpecificCause(ex));
		}

		public List<String> recovered() {
			return this.recovered;
		}

		public List<Throwable> exceptions() {
			return this.exceptions;
		}

	}

}
