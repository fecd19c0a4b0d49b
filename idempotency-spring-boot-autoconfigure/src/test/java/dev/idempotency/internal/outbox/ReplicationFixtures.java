package dev.idempotency.internal.outbox;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the tests of the replication relay share: applications that relay the outbox
 * table {@code <name>_outbox} through the slot {@code <name>_outbox_slot}, dropping the
 * slot and the publication after a test, and the checks of what a topic received.
 */
final class ReplicationFixtures {

	private ReplicationFixtures() {
	}

	/**
	 * Start an application that relays the outbox table {@code <name>_outbox} through the
	 * replication stream.
	 * @param name the prefix of the tables
	 * @param properties more properties, as {@code name=value}
	 * @return the running application
	 */
	static ConfigurableApplicationContext run(String name, String... properties) {
		List<String> all = new ArrayList<>(List.of("idempotency.outbox.replication.enabled=true",
				"idempotency.outbox.replication.standby-retry-interval=500ms"));
		all.addAll(Arrays.asList(properties));
		return OutboxFixtures.runRelay(OutboxFixtures.Writer.class, name, all.toArray(String[]::new));
	}

	/**
	 * A template on the test server, outside any application.
	 * @return the template
	 */
	static JdbcTemplate jdbc() {
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		return new JdbcTemplate(new SimpleDriverDataSource(new org.postgresql.Driver(), postgres.jdbcUrl(),
				postgres.username(), postgres.password()));
	}

	/**
	 * Drop the slot and the publication of the outbox table {@code <name>_outbox}, once no
	 * relay streams the slot: a slot left behind would hold the server's WAL.
	 * @param name the prefix of the tables
	 */
	static void dropSlot(String name) {
		JdbcTemplate jdbc = jdbc();
		String slot = name + "_outbox_slot";
		for (int i = 0; i < 100; i++) {
			List<Boolean> active = jdbc.queryForList("SELECT active FROM pg_replication_slots WHERE slot_name = ?",
					Boolean.class, slot);
			if (active.isEmpty()) {
				break;
			}
			if (!active.get(0)) {
				jdbc.queryForList("SELECT pg_drop_replication_slot(?)", Object.class, slot);
				break;
			}
			OutboxFixtures.sleep(java.time.Duration.ofMillis(100));
		}
		jdbc.execute("DROP PUBLICATION IF EXISTS " + name + "_outbox_publication");
	}

	/**
	 * Return the process id of the connection that streams a slot.
	 * @param name the prefix of the tables
	 * @return the process id, or {@code null} when no connection streams it
	 */
	static Integer activePid(String name) {
		List<Integer> pids = jdbc().queryForList(
				"SELECT active_pid FROM pg_replication_slots WHERE slot_name = ? AND active", Integer.class,
				name + "_outbox_slot");
		return pids.isEmpty() ? null : pids.get(0);
	}

	/**
	 * Assert that a topic received every event published, the first copy of each in
	 * publication order per key (values {@code <key>:<sequence>}), and that every copy
	 * carries its event's id.
	 * @param records what the topic received
	 * @param published the event ids published, by value
	 * @return the number of copies beyond the first (re-sends)
	 */
	static int assertEveryEventOncePerKeyInOrder(List<ConsumerRecord<String, String>> records,
			Map<String, String> published) {
		return assertEveryEventOncePerKeyInOrder(records, published, Map.of());
	}

	/**
	 * Assert that a topic received every event published, and perhaps events whose commit
	 * is in doubt (their transaction failed as the server went away, maybe after it
	 * committed), the first copy of each in publication order per key (values
	 * {@code <key>:<sequence>}), and that every copy carries its event's id.
	 * @param records what the topic received
	 * @param published the event ids published, by value
	 * @param inDoubt the event ids whose commit is in doubt, by value
	 * @return the number of copies beyond the first (re-sends)
	 */
	static int assertEveryEventOncePerKeyInOrder(List<ConsumerRecord<String, String>> records,
			Map<String, String> published, Map<String, String> inDoubt) {
		Set<String> seen = new HashSet<>();
		Map<String, Integer> lastByKey = new HashMap<>();
		int duplicates = 0;
		for (ConsumerRecord<String, String> record : records) {
			String value = record.value();
			String id = published.containsKey(value) ? published.get(value) : inDoubt.get(value);
			assertThat(id).as("a published event: %s", value).isNotNull();
			assertThat(TestConsumer.header(record, OutboxRelay.IDEMPOTENCY_KEY_HEADER)).as("event id of %s", value)
				.isEqualTo(id);
			if (!seen.add(value)) {
				duplicates++;
				continue;
			}
			int sequence = Integer.parseInt(value.substring(value.lastIndexOf(':') + 1));
			Integer last = lastByKey.put(record.key(), sequence);
			if (last != null) {
				assertThat(sequence).as("order of %s", record.key()).isGreaterThan(last);
			}
		}
		assertThat(seen).containsAll(published.keySet());
		return duplicates;
	}

}
