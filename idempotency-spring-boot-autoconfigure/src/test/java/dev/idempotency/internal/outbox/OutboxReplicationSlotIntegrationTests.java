package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.metrics.IdempotencyMeters;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What the replication relay tells about its slot (a meter of its lag, the health
 * contributor) and what it does when the server invalidated the slot, on a real
 * PostgreSQL and a real Kafka broker.
 */
class OutboxReplicationSlotIntegrationTests {

	private static final String NAME = "replslot";

	@AfterEach
	void dropSlot() {
		ReplicationFixtures.dropSlot(NAME);
	}

	@Test
	void theSlotsLagIsAMeterAndItsStateIsInTheHealth() {
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(NAME)) {
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			await().atMost(Duration.ofSeconds(30))
				.until(() -> registry.find(IdempotencyMeters.OUTBOX_REPLICATION_LAG.meterName()).gauge() != null);
			Gauge lag = registry.get(IdempotencyMeters.OUTBOX_REPLICATION_LAG.meterName()).gauge();
			assertThat(lag.getId().getBaseUnit()).isEqualTo("bytes");
			assertThat(lag.value()).isGreaterThanOrEqualTo(0);
			Health health = context.getBean("idempotencyHealthIndicator", HealthIndicator.class).health();
			assertThat(health.getStatus()).isEqualTo(Status.UP);
			assertThat(health.getDetails().get("replication")).asInstanceOf(
					org.assertj.core.api.InstanceOfAssertFactories.MAP)
				.containsEntry("slot", NAME + "_outbox_slot")
				.containsEntry("activeHere", true)
				.containsEntry("active", true)
				.containsKey("lagBytes");
		}
	}

	/**
	 * The server invalidates the slot while no relay streams it (it held more WAL than
	 * {@code max_slot_wal_keep_size}): the relay says so, the health is {@code DOWN}, and
	 * no event is skipped. Once the slot is dropped, the relay creates it again and sends
	 * the events written meanwhile from the table, in order.
	 */
	@Test
	void anInvalidatedSlotStopsTheRelayLoudlyAndTheRecoveryLosesNothing() {
		String topic = "it-repl-invalidated-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 2);
		Map<String, String> published = new ConcurrentHashMap<>();
		JdbcTemplate server = ReplicationFixtures.jdbc();
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(NAME);
				TestConsumer consumer = new TestConsumer(topic)) {
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
			relay.stop();
			for (int i = 0; i < 20; i++) {
				String value = "key-" + (i % 4) + ":" + i;
				published.put(value, OutboxFixtures.publish(context, topic, "key-" + (i % 4), value).toString());
			}
			invalidate(server, NAME + "_outbox_slot");

			relay.start();
			HealthIndicator health = context.getBean("idempotencyHealthIndicator", HealthIndicator.class);
			await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
				Health state = health.health();
				assertThat(state.getStatus()).isEqualTo(Status.DOWN);
				assertThat(state.getDetails().get("reason")).asString().contains("is invalidated");
			});
			assertThat(relay.isActive()).isFalse();
			assertThat(relay.slotState().problem()).contains("invalidated");
			// nothing was sent, nothing was skipped: the events are still in the table
			assertThat(consumer.receive(1, Duration.ofSeconds(2))).isEmpty();
			assertThat(server.queryForObject("SELECT count(*) FROM " + NAME + "_outbox", Integer.class)).isEqualTo(20);

			// the recovery: drop the slot; the relay creates it again and sends the backlog
			server.queryForList("SELECT pg_drop_replication_slot(?)", Object.class, NAME + "_outbox_slot");
			await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
			for (int i = 20; i < 30; i++) {
				String value = "key-" + (i % 4) + ":" + i;
				published.put(value, OutboxFixtures.publish(context, topic, "key-" + (i % 4), value).toString());
			}
			List<ConsumerRecord<String, String>> records = consumer.receiveUntil(
					(received) -> received.size() >= published.size(), Duration.ofSeconds(30));
			assertThat(ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, published)).isZero();
			await().atMost(Duration.ofSeconds(30)).until(() -> health.health().getStatus().equals(Status.UP));
		}
	}

	// Lets the server keep 1 MB of WAL for slots, writes a few segments past the slot and
	// checkpoints: the checkpoint invalidates it.
	private static void invalidate(JdbcTemplate server, String slot) {
		server.execute("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
		server.queryForList("SELECT pg_reload_conf()", Object.class);
		try {
			await().atMost(Duration.ofSeconds(10))
				.until(() -> "1MB".equals(server.queryForObject("SHOW max_slot_wal_keep_size", String.class)));
			for (int i = 0; i < 4; i++) {
				server.queryForList("SELECT pg_logical_emit_message(false, 'filler', repeat('x', 100000))",
						Object.class);
				server.queryForList("SELECT pg_switch_wal()", Object.class);
			}
			server.execute("CHECKPOINT");
			assertThat(server.queryForObject("SELECT wal_status FROM pg_replication_slots WHERE slot_name = ?",
					String.class, slot)).isEqualTo("lost");
		}
		finally {
			server.execute("ALTER SYSTEM RESET max_slot_wal_keep_size");
			server.queryForList("SELECT pg_reload_conf()", Object.class);
		}
	}

}
