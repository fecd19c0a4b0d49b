package dev.idempotency.internal.outbox;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The active reader of the replication relay killed (SIGKILL) with batches in flight, as
 * a process of its own: the standby instance takes over within 10 seconds, and every
 * event arrives, in order per key, re-sent ones with their ids.
 */
class OutboxReplicationKillIntegrationTests {

	private static final String NAME = "replkill";

	@AfterEach
	void dropSlot() {
		ReplicationFixtures.dropSlot(NAME);
	}

	@Test
	void theActiveReaderKilledWithABatchInFlightIsTakenOverWithoutLoss() throws Exception {
		String topic = "it-repl-kill-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 3);
		Path log = Files.createTempFile("replication-relay-", ".log");
		// slow batches (a linger before each wave of sends), so that the kill finds one in flight
		Process active = ReplicationRelayProcess.start(NAME, log, "idempotency.outbox.batch-size=50",
				"spring.kafka.producer.properties[linger.ms]=50");
		Map<String, String> published = new ConcurrentHashMap<>();
		try {
			await().atMost(Duration.ofSeconds(120)).until(() -> {
				assertThat(active.isAlive()).as("the relay process (see %s)", log).isTrue();
				return ReplicationFixtures.activePid(NAME) != null;
			});
			try (ConfigurableApplicationContext standby = ReplicationFixtures.run(NAME);
					TestConsumer consumer = new TestConsumer(topic)) {
				OutboxReplicationRelay relay = standby.getBean(OutboxReplicationRelay.class);
				assertThat(relay.isActive()).isFalse();
				for (int i = 0; i < 3000; i += 10) {
					int first = i;
					OutboxFixtures.publishInOneTransaction(standby, (outbox) -> {
						for (int j = first; j < first + 10; j++) {
							String value = "key-" + (j % 10) + ":" + j;
							published.put(value, outbox.publish(topic, "key-" + (j % 10), value).toString());
						}
					});
				}
				consumer.receiveUntil((received) -> received.size() >= 300, Duration.ofSeconds(60));
				assertThat(relay.isActive()).isFalse();
				int receivedBeforeTheKill = consumer.receive(0, Duration.ZERO).size();
				active.destroyForcibly().waitFor();
				assertThat(receivedBeforeTheKill).as("events received before the kill").isLessThan(published.size());
				long killed = System.nanoTime();
				await().atMost(Duration.ofSeconds(30)).until(relay::isActive);
				assertThat(Duration.ofNanos(System.nanoTime() - killed)).isLessThan(Duration.ofSeconds(10));
				List<ConsumerRecord<String, String>> records = consumer.receiveUntil(
						(received) -> received.stream().map(ConsumerRecord::value).distinct().count() >= published.size(),
						Duration.ofSeconds(60));
				ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, published);
			}
		}
		finally {
			active.destroyForcibly();
		}
	}

}
