package dev.idempotency.internal.consumer;

import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestInfrastructure;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A record listener without the Redis cache looks the keys of a poll up in the store's
 * table in one statement: a key found there is skipped without a transaction; a key
 * another consumer claims after the lookup is still applied once, because the claim
 * decides.
 */
class PollLookupIntegrationTests {

	private static final String GROUP = "poll-lookup";

	private static final String TOPIC = "it-poll-lookup-" + UUID.randomUUID();

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=lookup_effects", "test.topic=" + TOPIC);

	@Test
	void skipsKeysTheTableHoldsAndLeavesAKeyClaimedAfterTheLookupToTheClaim() {
		String run = UUID.randomUUID().toString();
		// processed before: the lookup finds it
		app.jdbc()
			.update("INSERT INTO processed_messages (consumer_group, idempotency_key) VALUES (?, ?)", GROUP,
					run + "-processed-before");
		// one poll: the three records are sent before the listener starts
		for (String key : new String[] { "first", "claimed-meanwhile", "processed-before" }) {
			app.send(TOPIC, run + "-" + key, run + "-" + key);
		}
		app.container("lookup").start();
		app.awaitCommitted(GROUP, TOPIC);

		assertThat(app.bean(TestEffects.class).keys(GROUP)).containsExactly(run + "-first");
		assertThat(app.count("idempotency.messages", "outcome", "processed")).isEqualTo(1);
		assertThat(app.count("idempotency.messages", "outcome", "duplicate", "source", "store")).isEqualTo(2);
		// the key found by the lookup was never claimed; the two others were
		assertThat(app.bean(MeterRegistry.class).get("idempotency.claim").timer().count()).isEqualTo(2);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Listener listener() {
			TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
			// another consumer: its own connection, its claim committed at once
			JdbcTemplate other = new JdbcTemplate(
					new DriverManagerDataSource(postgres.jdbcUrl(), postgres.username(), postgres.password()));
			return new Listener(other);
		}

	}

	static class Listener extends RecordingListener {

		private final JdbcTemplate otherConsumer;

		Listener(JdbcTemplate otherConsumer) {
			this.otherConsumer = otherConsumer;
		}

		@KafkaListener(id = "lookup", topics = "${test.topic}", groupId = GROUP, autoStartup = "false")
		@Idempotent
		public void apply(String key) {
			if (key.endsWith("-first")) {
				// after the poll's lookup, before the next record's claim
				String next = key.replace("-first", "-claimed-meanwhile");
				this.otherConsumer.update(
						"INSERT INTO processed_messages (consumer_group, idempotency_key) VALUES (?, ?)", GROUP, next);
			}
			effects().add(GROUP, key);
		}

	}

}
