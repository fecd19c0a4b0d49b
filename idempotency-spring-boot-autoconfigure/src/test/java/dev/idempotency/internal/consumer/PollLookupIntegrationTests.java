package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import dev.idempotency.test.TestMeters;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A record listener without the Redis cache looks the keys of a poll up in the store's
 * table in one statement: a key found there is skipped without a transaction; a key
 * another consumer claims after the lookup is still applied once, because the claim
 * decides.
 */
class PollLookupIntegrationTests {

	private static final String GROUP = "poll-lookup";

	@Test
	void skipsKeysTheTableHoldsAndLeavesAKeyClaimedAfterTheLookupToTheClaim() {
		String topic = "it-poll-lookup-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1);
		String run = UUID.randomUUID().toString();
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"test.topic=" + topic)) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			// processed before: the lookup finds it
			jdbc.update("INSERT INTO processed_messages (consumer_group, idempotency_key) VALUES (?, ?)", GROUP,
					run + "-processed-before");
			// one poll: the three records are sent before the listener starts
			for (String key : new String[] { "first", "claimed-meanwhile", "processed-before" }) {
				TestKafka.send(topic, 0, run + "-" + key, Map.of("X-Idempotency-Key", run + "-" + key));
			}
			context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("lookup").start();
			TestKafka.awaitCommitted(GROUP, new TopicPartition(topic, 0), Duration.ofSeconds(30));

			assertThat(jdbc.queryForList("SELECT message_key FROM lookup_effects ORDER BY id", String.class))
				.containsExactly(run + "-first");
			assertThat(TestMeters.count(context, "idempotency.messages", "outcome", "processed")).isEqualTo(1);
			assertThat(TestMeters.count(context, "idempotency.messages", "outcome", "duplicate", "source", "store"))
				.isEqualTo(2);
			// the key found by the lookup was never claimed; the two others were
			assertThat(context.getBean(MeterRegistry.class).get("idempotency.claim").timer().count()).isEqualTo(2);
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Effects effects(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS lookup_effects (id BIGSERIAL PRIMARY KEY, message_key TEXT NOT NULL)");
			TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
			// another consumer: its own connection, its claim committed at once
			JdbcTemplate other = new JdbcTemplate(
					new DriverManagerDataSource(postgres.jdbcUrl(), postgres.username(), postgres.password()));
			return new Effects(jdbc, other);
		}

	}

	static class Effects {

		private final JdbcTemplate jdbc;

		private final JdbcTemplate otherConsumer;

		Effects(JdbcTemplate jdbc, JdbcTemplate otherConsumer) {
			this.jdbc = jdbc;
			this.otherConsumer = otherConsumer;
		}

		@KafkaListener(id = "lookup", topics = "${test.topic}", groupId = GROUP, autoStartup = "false")
		@Idempotent
		public void apply(String key) {
			if (key.endsWith("-first")) {
				// after the poll's lookup, before the next record's claim
				String next = key.replace("-first", "-claimed-meanwhile");
				this.otherConsumer.update("INSERT INTO processed_messages (consumer_group, idempotency_key) VALUES (?, ?)",
						GROUP, next);
			}
			this.jdbc.update("INSERT INTO lookup_effects (message_key) VALUES (?)", key);
		}

	}

}
