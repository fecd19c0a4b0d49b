package dev.idempotency.internal.outbox;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

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
 * A transaction reaches the replication stream once its commit is written to the WAL, and
 * other sessions see its rows a moment later: in between, the row of an event already
 * streamed, sent and acknowledged cannot be deleted, nor parked. The moment is made long
 * here the way a server with synchronous replication makes it: the writer's commit waits
 * for a standby that never answers (it is in the WAL and streamed, but not visible), until
 * the wait is cancelled. The server is one of the test's own.
 */
class OutboxReplicationVisibilityIntegrationTests {

	private static final String NAME = "replvisible";

	private RestartablePostgres postgres;

	@BeforeEach
	void startServer() throws Exception {
		this.postgres = RestartablePostgres.start();
		JdbcTemplate jdbc = this.postgres.jdbc();
		jdbc.execute("ALTER SYSTEM SET synchronous_standby_names = 'standby_that_never_answers'");
		jdbc.execute("SELECT pg_reload_conf()");
	}

	@AfterEach
	void stopServer() throws Exception {
		this.postgres.close();
	}

	@Test
	void theRowOfAnEventStreamedBeforeItsTransactionWasVisibleIsCompletedOnceItIs() throws Exception {
		streamAndHoldTheCommitInvisible(Duration.ofSeconds(1), () -> {
		}, NOTHING_MORE, () -> {
		});
	}

	/**
	 * The later batches are sent while the first one's transaction is not visible, and
	 * their rows wait behind its row; once two completions wait, the relay's thread waits
	 * for them before it reads on, and must still answer the server meanwhile.
	 */
	@Test
	void laterBatchesAreSentWhileAnEarlierTransactionIsInvisibleAndTheStreamStaysConnected() throws Exception {
		holdInvisibleForLongerThanTheServersTimeout((context, consumer, topic) -> {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			for (int i = 0; i < 2; i++) {
				// one batch each: the next is written once this one is received
				String value = "later:" + i;
				OutboxFixtures.publish(context, topic, "later", value);
				assertThat(consumer.receiveUntil((received) -> received.stream()
					.anyMatch((record) -> record.value().equals(value)), Duration.ofSeconds(30)))
					.extracting(ConsumerRecord::value)
					.contains(value);
			}
			// two completions wait (the first for its transaction's visibility): the
			// relay's thread waits for them before it reads this one
			OutboxFixtures.publish(context, topic, "later", "later:2");
			OutboxFixtures.sleep(Duration.ofSeconds(1));
			assertThat(consumer.receive(0, Duration.ZERO)).extracting(ConsumerRecord::value)
				.doesNotContain("later:2");
			// completed in order: behind the invisible transaction's row
			assertThat(jdbc.queryForObject("SELECT count(*) FROM " + NAME + "_outbox", Integer.class))
				.isEqualTo(3);
		});
	}

	/**
	 * While a transaction stays invisible its row cannot be completed, and the slot's
	 * position cannot move past it; the relay must still answer the server, which
	 * otherwise ends the connection after {@code wal_sender_timeout} (a standby that
	 * answers late would cost a reconnection and the batch sent again).
	 */
	@Test
	void theStreamStaysConnectedWhileTheRelayWaitsForATransactionToBecomeVisible() throws Exception {
		holdInvisibleForLongerThanTheServersTimeout(NOTHING_MORE);
	}

	// holds the commit invisible for 6 s with wal_sender_timeout at 2 s: the same wal
	// sender must stream the slot at the end
	private void holdInvisibleForLongerThanTheServersTimeout(WhileInvisible whileInvisible) throws Exception {
		JdbcTemplate server = this.postgres.jdbc();
		server.execute("ALTER SYSTEM SET wal_sender_timeout = '2s'");
		server.execute("SELECT pg_reload_conf()");
		AtomicReference<Integer> walSender = new AtomicReference<>();
		streamAndHoldTheCommitInvisible(Duration.ofSeconds(6), () -> walSender.set(activePid(server)), whileInvisible,
				() -> assertThat(activePid(server)).as("the slot's wal sender after 6 s of waiting")
					.isNotNull()
					.isEqualTo(walSender.get()),
				"idempotency.outbox.replication.status-interval=500ms");
	}

	/**
	 * A stop does not wait for a transaction that may stay invisible for long: the
	 * completion waiting for it gives up (its row stays behind the slot's position, and is
	 * streamed again), and no thread of the relay is left behind.
	 */
	@Test
	void aStopDoesNotWaitForAnInvisibleTransaction() throws Exception {
		streamAndHoldTheCommitInvisible(Duration.ofSeconds(1), () -> {
		}, (context, consumer, topic) -> {
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			long started = System.nanoTime();
			relay.stop();
			assertThat(Duration.ofNanos(System.nanoTime() - started)).as("time to stop")
				.isLessThan(Duration.ofSeconds(5));
			await().atMost(Duration.ofSeconds(5))
				.untilAsserted(() -> assertThat(Thread.getAllStackTraces().keySet())
					.noneMatch((thread) -> thread.getName().equals("idempotency-outbox-completion")));
			// started again, it streams the event again and completes it once visible
			relay.start();
		}, () -> {
		}, "idempotency.outbox.shutdown-timeout=20s");
	}

	private static final WhileInvisible NOTHING_MORE = (context, consumer, topic) -> {
	};

	/**
	 * What a test does while the first transaction is streamed, sent and still invisible.
	 */
	@FunctionalInterface
	private interface WhileInvisible {

		void run(ConfigurableApplicationContext context, TestConsumer consumer, String topic);

	}

	// streams an event whose transaction's commit waits for a standby that never answers,
	// holds it invisible for the given time (the checks run before the commit and at the
	// end of the hold), then cancels the wait: the event's row must be completed once visible
	private void streamAndHoldTheCommitInvisible(Duration hold, Runnable beforeCommit,
			WhileInvisible whileInvisible, Runnable afterHold,
			String... properties) throws Exception {
		String topic = "it-repl-visible-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1);
		List<String> all = new ArrayList<>(List.of("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=postgres", "spring.datasource.password=postgres",
				// the application's sessions commit without waiting for a standby
				"spring.datasource.hikari.connection-init-sql=SET synchronous_commit = local"));
		all.addAll(List.of(properties));
		try (ConfigurableApplicationContext context = ReplicationFixtures.run(NAME, all.toArray(String[]::new));
				TestConsumer consumer = new TestConsumer(topic)) {
			OutboxReplicationRelay relay = context.getBean(OutboxReplicationRelay.class);
			await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			try (Connection writer = DriverManager.getConnection(this.postgres.jdbcUrl(), "postgres", "postgres")) {
				int writerPid = pid(writer);
				beforeCommit.run();
				CompletableFuture<Void> commit = CompletableFuture.runAsync(() -> insertAndCommit(writer, topic));
				// streamed and sent while its transaction is not visible to any other session
				List<ConsumerRecord<String, String>> received = consumer.receive(1, Duration.ofSeconds(30));
				assertThat(received).extracting(ConsumerRecord::value).containsExactly("streamed before it was visible");
				assertThat(commit).isNotDone();
				assertThat(jdbc.queryForObject("SELECT count(*) FROM " + NAME + "_outbox", Integer.class)).isZero();
				whileInvisible.run(context, consumer, topic);
				OutboxFixtures.sleep(hold);
				assertThat(commit).isNotDone();
				afterHold.run();
				// the wait for the standby cancelled: the transaction is visible now
				jdbc.queryForObject("SELECT pg_cancel_backend(?)", Boolean.class, writerPid);
				commit.get();
			}
			await().atMost(Duration.ofSeconds(10))
				.untilAsserted(() -> assertThat(jdbc.queryForObject("SELECT count(*) FROM " + NAME + "_outbox",
						Integer.class))
					.as("outbox rows left behind")
					.isZero());
		}
	}

	private static Integer activePid(JdbcTemplate server) {
		return server.queryForObject("SELECT active_pid FROM pg_replication_slots WHERE slot_name = ?", Integer.class,
				NAME + "_outbox_slot");
	}

	private static int pid(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement()) {
			ResultSet result = statement.executeQuery("SELECT pg_backend_pid()");
			result.next();
			return result.getInt(1);
		}
	}

	// commits with the server's wait for a synchronous standby, which only a cancel ends
	private static void insertAndCommit(Connection writer, String topic) {
		try (Statement statement = writer.createStatement();
				PreparedStatement insert = writer.prepareStatement("INSERT INTO " + NAME
						+ "_outbox (event_id, aggregate_id, topic, payload) VALUES (?, 'key', ?, ?)")) {
			statement.execute("SET synchronous_commit = on");
			writer.setAutoCommit(false);
			insert.setObject(1, UUID.randomUUID());
			insert.setString(2, topic);
			insert.setBytes(3, "streamed before it was visible".getBytes(StandardCharsets.UTF_8));
			insert.executeUpdate();
			writer.commit();
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

}
