package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * PostgreSQL stopped (fast shutdown) and started again on the same data directory and
 * port while events are written and relayed through the replication stream: the relay
 * streams again by itself, and every event committed arrives, in order per key, with the
 * table emptied behind it. The server is one of the test's own.
 */
class OutboxReplicationRestartIntegrationTests {

	private static final String NAME = "replrestart";

	private RestartablePostgres postgres;

	@BeforeEach
	void startServer() throws Exception {
		this.postgres = RestartablePostgres.start();
	}

	@AfterEach
	void stopServer() throws Exception {
		this.postgres.close();
	}

	@Test
	void resumesStreamingAfterTheServerRestartsWithEveryCommittedEventInOrder() throws Exception {
		String topic = "it-repl-restart-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 3);
		Map<String, String> committed = new ConcurrentHashMap<>();
		// events whose commit failed: the server may have committed them before it went away
		Map<String, String> inDoubt = new ConcurrentHashMap<>();
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(NAME,
				"spring.datasource.url=" + this.postgres.jdbcUrl(), "spring.datasource.username=postgres",
				"spring.datasource.password=postgres", "spring.datasource.hikari.connection-timeout=1000");
				TestConsumer consumer = new TestConsumer(topic)) {
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
			Writer writer = new Writer(context, topic, committed, inDoubt);
			Thread writing = new Thread(writer, "restart-test-writer");
			writing.start();
			try {
				assertThat(consumer.receiveUntil((received) -> received.size() >= 300, Duration.ofSeconds(60)))
					.as("events relayed before the restart")
					.hasSizeGreaterThanOrEqualTo(300);
				this.postgres.stop();
				await().atMost(Duration.ofSeconds(30)).until(() -> !relay.isActive());
				OutboxFixtures.sleep(Duration.ofSeconds(1));
				this.postgres.restart();
				int committedBeforeTheRestart = writer.transactions.get();
				await().atMost(Duration.ofSeconds(60)).until(relay::isActive);
				// events written after the restart, relayed by the same relay
				await().atMost(Duration.ofSeconds(60))
					.until(() -> writer.transactions.get() >= committedBeforeTheRestart + 100);
			}
			finally {
				writer.running.set(false);
				writing.join(30_000);
			}
			assertThat(writer.failure).as("the writer's unexpected failure").isNull();
			List<ConsumerRecord<String, String>> records = consumer.receiveUntil((received) -> received.stream()
				.map(ConsumerRecord::value)
				.collect(Collectors.toSet())
				.containsAll(committed.keySet()), Duration.ofSeconds(120));
			ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, committed, inDoubt);
			JdbcTemplate jdbc = this.postgres.jdbc();
			await().atMost(Duration.ofSeconds(60))
				.untilAsserted(() -> assertThat(
						jdbc.queryForObject("SELECT count(*) FROM " + NAME + "_outbox", Integer.class))
					.as("rows left in the outbox table")
					.isZero());
			assertThat(relay.isActive()).isTrue();
			assertThat(jdbc.queryForObject("SELECT active FROM pg_replication_slots WHERE slot_name = ?", Boolean.class,
					NAME + "_outbox_slot"))
				.as("the slot streamed on the restarted server")
				.isTrue();
		}
	}

	/**
	 * Writes transactions of five events over ten keys, one after another, until stopped:
	 * a transaction that fails (the server is away) is recorded as in doubt, and the
	 * next one tried after a pause.
	 */
	private static final class Writer implements Runnable {

		private final ConfigurableApplicationContext context;

		private final String topic;

		private final Map<String, String> committed;

		private final Map<String, String> inDoubt;

		final AtomicBoolean running = new AtomicBoolean(true);

		final AtomicInteger transactions = new AtomicInteger();

		volatile Throwable failure;

		Writer(ConfigurableApplicationContext context, String topic, Map<String, String> committed,
				Map<String, String> inDoubt) {
			this.context = context;
			this.topic = topic;
			this.committed = committed;
			this.inDoubt = inDoubt;
		}

		@Override
		public void run() {
			int sequence = 0;
			try {
				while (this.running.get()) {
					Map<String, String> written = new HashMap<>();
					int first = sequence;
					sequence += 5;
					try {
						OutboxFixtures.publishInOneTransaction(this.context, (outbox) -> {
							for (int i = first; i < first + 5; i++) {
								String key = "key-" + (i % 10);
								String value = key + ":" + i;
								written.put(value, outbox.publish(this.topic, key, value).toString());
							}
						});
						this.committed.putAll(written);
						this.transactions.incrementAndGet();
						OutboxFixtures.sleep(Duration.ofMillis(5));
					}
					catch (RuntimeException ex) {
						this.inDoubt.putAll(written);
						OutboxFixtures.sleep(Duration.ofMillis(100));
					}
				}
			}
			catch (Throwable ex) {
				this.failure = ex;
			}
		}

	}

}
