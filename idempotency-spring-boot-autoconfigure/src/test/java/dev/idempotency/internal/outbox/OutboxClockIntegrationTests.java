package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.UUID;

import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestInfrastructure.Postgres;
import org.junit.jupiter.api.Test;

import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The database clock that stamps an event and the one a relay claims by are not always
 * the same: the server's clock steps back (a time correction, a failover to a standby
 * whose clock is behind). A new event must not wait for the clock to catch up with its
 * stamp.
 */
class OutboxClockIntegrationTests {

	/**
	 * The relay's connections see a {@code now()} an hour behind the clock that stamps
	 * the events: a function of that name in a schema searched before {@code pg_catalog}
	 * stands for the server's clock after it stepped back. The column defaults were bound
	 * to the real clock when the table was created, so the publisher's stamp is an hour
	 * ahead of the relay's clock.
	 */
	@Test
	void aNewEventIsPublishedAtOnceAfterTheDatabaseClockSteppedBack() {
		String topic = "it-outbox-clock";
		TestInfrastructure.createTopic(topic, 1);
		Postgres postgres = TestInfrastructure.postgres();
		new JdbcTemplate(new DriverManagerDataSource(postgres.jdbcUrl(), postgres.username(), postgres.password()))
			.execute("""
					CREATE SCHEMA IF NOT EXISTS clock_behind;
					CREATE OR REPLACE FUNCTION clock_behind.now() RETURNS timestamptz LANGUAGE sql STABLE
					    AS $$ SELECT pg_catalog.now() - interval '1 hour' $$;
					""");
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "clock",
				"idempotency.outbox.poll-interval=100ms",
				"spring.datasource.hikari.connection-init-sql=SET search_path = public, clock_behind, pg_catalog");
				TestConsumer consumer = new TestConsumer(topic)) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			assertThat(jdbc.queryForObject("SELECT extract(epoch FROM clock_timestamp() - now())", Double.class))
				.as("the relay's clock is behind").isGreaterThan(3000.0);
			UUID eventId = OutboxFixtures.publish(context, topic, "k", "stamped ahead");
			assertThat(consumer.receive(1, Duration.ofSeconds(20))).singleElement()
				.satisfies((record) -> assertThat(TestConsumer.header(record, OutboxRelay.IDEMPOTENCY_KEY_HEADER))
					.isEqualTo(eventId.toString()));
		}
	}

}
