package dev.idempotency.autoconfigure;

import javax.sql.DataSource;

import dev.idempotency.internal.outbox.OutboxRepository;
import org.junit.jupiter.api.Test;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link IdempotencyHealthAutoConfiguration}, on a real PostgreSQL.
 */
class IdempotencyHealthAutoConfigurationTests {

	private final ApplicationContextRunner runner = AutoConfigurationRunners
		.onTheTestServers(IdempotencyAutoConfiguration.class, IdempotencySchemaAutoConfiguration.class,
				IdempotencyJdbcStoreAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class,
				IdempotencyHealthAutoConfiguration.class)
		.withPropertyValues("idempotency.outbox.relay-enabled=false", "idempotency.outbox.table=health_outbox",
				"idempotency.flyway.table=health_schema_history");

	@Test
	void reportsUpWithTheOutboxStateWhenActuatorIsOnTheClasspath() {
		this.runner.run((context) -> {
			assertThat(context).hasBean("idempotencyHealthIndicator");
			new JdbcTemplate(context.getBean(DataSource.class)).update("DELETE FROM health_outbox");
			Health health = context.getBean("idempotencyHealthIndicator", HealthIndicator.class).health();
			assertThat(health.getStatus()).isEqualTo(Status.UP);
			assertThat(health.getDetails()).containsEntry("store", "jdbc")
				.containsEntry("pending", 0L)
				.containsEntry("dead", 0L)
				.containsEntry("oldestPendingAge", "PT0S");
		});
	}

	@Test
	void isAbsentWithoutActuator() {
		this.runner.withClassLoader(new FilteredClassLoader(HealthIndicator.class))
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean("idempotencyHealthIndicator"));
	}

	@Test
	void isAbsentWhenSwitchedOff() {
		this.runner.withPropertyValues("management.health.idempotency.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean("idempotencyHealthIndicator"));
	}

	@Test
	void isOutOfServiceWithDeadEventsOrAnOldPendingEvent() {
		this.runner.withPropertyValues("idempotency.health.outbox.max-oldest-age=1m").run((context) -> {
			JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
			HealthIndicator indicator = context.getBean("idempotencyHealthIndicator", HealthIndicator.class);
			jdbc.update("DELETE FROM health_outbox");
			jdbc.update("INSERT INTO health_outbox (event_id, aggregate_id, topic, payload, status) "
					+ "VALUES (gen_random_uuid(), 'k', 't', '\\x00'::bytea, 'DEAD')");
			Health dead = indicator.health();
			assertThat(dead.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
			assertThat(dead.getDetails()).containsEntry("dead", 1L);
			jdbc.update("DELETE FROM health_outbox");
			jdbc.update("INSERT INTO health_outbox (event_id, aggregate_id, topic, payload, created_at) "
					+ "VALUES (gen_random_uuid(), 'k', 't', '\\x00'::bytea, clock_timestamp() - interval '2 minutes')");
			Health old = indicator.health();
			assertThat(old.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
			assertThat(old.getDetails()).containsEntry("pending", 1L);
			assertThat((String) old.getDetails().get("reason")).contains("max-oldest-age");
			jdbc.update("DELETE FROM health_outbox");
			assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);
		});
	}

	@Test
	void reportsMoreThanTheCountedEventsOfALargerBacklog() {
		this.runner.run((context) -> {
			JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
			HealthIndicator indicator = context.getBean("idempotencyHealthIndicator", HealthIndicator.class);
			jdbc.update("DELETE FROM health_outbox");
			insert(jdbc, "PENDING", OutboxRepository.MAX_COUNTED);
			assertThat(indicator.health().getDetails()).containsEntry("pending", (long) OutboxRepository.MAX_COUNTED);
			insert(jdbc, "PENDING", 1);
			insert(jdbc, "DEAD", OutboxRepository.MAX_COUNTED + 1);
			Health health = indicator.health();
			assertThat(health.getDetails()).containsEntry("pending", "more than 10000")
				.containsEntry("dead", "more than 10000")
				.containsEntry("reason", "more than 10000 dead outbox events (idempotency.health.outbox.max-dead=0)");
			jdbc.update("DELETE FROM health_outbox");
		});
	}

	private static void insert(JdbcTemplate jdbc, String status, int events) {
		jdbc.update("INSERT INTO health_outbox (event_id, aggregate_id, topic, payload, status) "
				+ "SELECT gen_random_uuid(), 'k' || g, 't', '\\x00'::bytea, ? FROM generate_series(1, ?) AS g", status,
				events);
	}

	@Test
	void isDownWhenTheStoreCannotBeRead() {
		this.runner
			.withPropertyValues("idempotency.flyway.enabled=false", "idempotency.store.jdbc.table=health_no_such_table")
			.run((context) -> {
				Health health = context.getBean("idempotencyHealthIndicator", HealthIndicator.class).health();
				assertThat(health.getStatus()).isEqualTo(Status.DOWN);
			});
	}

}
