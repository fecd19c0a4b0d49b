package dev.idempotency.autoconfigure;

import dev.idempotency.internal.outbox.OutboxRelay;
import dev.idempotency.internal.outbox.OutboxReplicationRelay;
import dev.idempotency.outbox.Outbox;
import org.junit.jupiter.api.Test;
import org.postgresql.replication.PGReplicationStream;

import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which relay the outbox's auto-configuration provides: the table relay by default, the
 * replication relay when switched on, never both.
 */
class IdempotencyOutboxReplicationAutoConfigurationTests {

	// not started: the tests look at the beans, not at a slot
	private final ApplicationContextRunner runner = AutoConfigurationRunners
		.onTheTestServers(IdempotencySchemaAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class)
		.withPropertyValues("idempotency.outbox.auto-startup=false", "idempotency.outbox.table=replconfig_outbox",
				"idempotency.flyway.table=replconfig_schema_history");

	@Test
	void providesTheTableRelayByDefault() {
		this.runner.run((context) -> {
			assertThat(context).hasSingleBean(OutboxRelay.class);
			assertThat(context).doesNotHaveBean(OutboxReplicationRelay.class);
		});
	}

	@Test
	void providesTheReplicationRelayInsteadWhenSwitchedOn() {
		this.runner.withPropertyValues("idempotency.outbox.replication.enabled=true").run((context) -> {
			assertThat(context).hasSingleBean(OutboxReplicationRelay.class);
			assertThat(context).doesNotHaveBean(OutboxRelay.class);
			assertThat(context).hasSingleBean(Outbox.class);
			assertThat(context.getBean(OutboxReplicationRelay.class).slotName()).isEqualTo("replconfig_outbox_slot");
		});
	}

	@Test
	void providesNoRelayOnAnInstanceWithoutOne() {
		this.runner.withPropertyValues("idempotency.outbox.replication.enabled=true",
				"idempotency.outbox.relay-enabled=false").run((context) -> {
					assertThat(context).doesNotHaveBean(OutboxReplicationRelay.class);
					assertThat(context).doesNotHaveBean(OutboxRelay.class);
					assertThat(context).hasSingleBean(Outbox.class);
				});
	}

	@Test
	void stopsTheApplicationWithoutThePostgresqlDriversReplicationApi() {
		this.runner.withPropertyValues("idempotency.outbox.replication.enabled=true")
			.withClassLoader(new FilteredClassLoader(PGReplicationStream.class))
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("idempotency.outbox.replication.enabled=true needs the PostgreSQL JDBC driver"));
	}

	@Test
	void refusesASlotNameThePostgresqlServerWouldRefuse() {
		this.runner
			.withPropertyValues("idempotency.outbox.replication.enabled=true",
					"idempotency.outbox.replication.slot-name=Outbox-Slot")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("idempotency.outbox.replication.slot-name"));
	}

}
