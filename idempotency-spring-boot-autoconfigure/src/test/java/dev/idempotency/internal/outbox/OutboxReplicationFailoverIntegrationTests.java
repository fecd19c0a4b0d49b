package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Several instances of the replication relay on one slot, against a real PostgreSQL and
 * a real Kafka broker: one streams, the others stand by and take over when it stops or
 * loses its connection, and nothing is lost or reordered on the way.
 */
class OutboxReplicationFailoverIntegrationTests {

	private static final String NAME = "replfailover";

	private static final int KEYS = 5;

	private final Map<String, String> published = new ConcurrentHashMap<>();

	// the sequence of each key is taken and committed in one step, so that its order is
	// the commit order whichever instance publishes
	private final Object commitOrder = new Object();

	private final AtomicInteger sequence = new AtomicInteger();

	@AfterEach
	void dropSlot() {
		ReplicationFixtures.dropSlot(NAME);
	}

	@Test
	void anotherInstanceTakesOverWithinTenSecondsWhenTheActiveOneStops() {
		String topic = topic();
		ConfigurableApplicationContext first = ReplicationFixtures.run(NAME);
		ConfigurableApplicationContext second = ReplicationFixtures.run(NAME);
		try (TestConsumer consumer = new TestConsumer(topic)) {
			await().atMost(Duration.ofSeconds(30)).until(() -> active(first) ^ active(second));
			ConfigurableApplicationContext active = active(first) ? first : second;
			ConfigurableApplicationContext standby = (active == first) ? second : first;
			// both instances publish; the active one relays the events of both
			publish(first, topic, 50);
			publish(second, topic, 50);
			consumer.receiveUntil((received) -> received.size() >= this.published.size(), Duration.ofSeconds(30));

			active.close();
			long stopped = System.nanoTime();
			await().atMost(Duration.ofSeconds(10)).until(() -> active(standby));
			assertThat(Duration.ofNanos(System.nanoTime() - stopped)).isLessThan(Duration.ofSeconds(10));
			publish(standby, topic, 50);
			// events sent but not confirmed before the stop may come again: count each once
			List<ConsumerRecord<String, String>> records = consumer.receiveUntil(
					(received) -> received.stream().map(ConsumerRecord::value).distinct().count() >= this.published
						.size(), Duration.ofSeconds(30));
			ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, this.published);
		}
		finally {
			first.close();
			second.close();
		}
	}

	@Test
	void theReadersConnectionLostWithBatchesInFlightLosesAndReordersNothing() throws Exception {
		String topic = topic();
		ConfigurableApplicationContext first = ReplicationFixtures.run(NAME);
		ConfigurableApplicationContext second = ReplicationFixtures.run(NAME);
		try (TestConsumer consumer = new TestConsumer(topic)) {
			await().atMost(Duration.ofSeconds(30)).until(() -> active(first) ^ active(second));
			// both publish until the three connections were ended (publishers that stopped
			// after a fixed count could finish before the third, which would then wait for
			// events that never come)
			AtomicBoolean stop = new AtomicBoolean();
			CompletableFuture<Void> publishing = CompletableFuture.allOf(
					CompletableFuture.runAsync(() -> publishUntil(first, topic, stop)),
					CompletableFuture.runAsync(() -> publishUntil(second, topic, stop)));
			try {
				// the server ends the streaming connection, as a crash of the reader or of
				// its network would, three times while events flow
				for (int i = 0; i < 3; i++) {
					int before = this.published.size();
					await().atMost(Duration.ofSeconds(60))
						.until(() -> this.published.size() >= before + 300 || publishing.isDone());
					assertThat(publishing).isNotDone();
					Integer pid = awaitActivePid();
					ReplicationFixtures.jdbc().queryForList("SELECT pg_terminate_backend(?)", Boolean.class, pid);
				}
				// and go on a moment after the third
				int before = this.published.size();
				await().atMost(Duration.ofSeconds(60))
					.until(() -> this.published.size() >= before + 100 || publishing.isDone());
			}
			finally {
				stop.set(true);
			}
			publishing.get();
			List<ConsumerRecord<String, String>> records = consumer.receiveUntil(
					(received) -> received.stream().map(ConsumerRecord::value).distinct().count() >= this.published
						.size(), Duration.ofSeconds(60));
			// a batch whose position was not confirmed yet is sent again, with its ids
			ReplicationFixtures.assertEveryEventOncePerKeyInOrder(records, this.published);
			await().atMost(Duration.ofSeconds(10)).until(() -> ReplicationFixtures.jdbc()
				.queryForObject("SELECT count(*) FROM " + NAME + "_outbox", Integer.class) == 0);
		}
		finally {
			first.close();
			second.close();
		}
	}

	private void publishUntil(ConfigurableApplicationContext context, String topic, AtomicBoolean stop) {
		while (!stop.get()) {
			publish(context, topic, 5);
		}
	}

	private static Integer awaitActivePid() {
		List<Integer> pid = new ArrayList<>();
		await().atMost(Duration.ofSeconds(30)).until(() -> {
			Integer active = ReplicationFixtures.activePid(NAME);
			if (active != null) {
				pid.add(active);
			}
			return active != null;
		});
		return pid.get(pid.size() - 1);
	}

	private void publish(ConfigurableApplicationContext context, String topic, int count) {
		for (int i = 0; i < count; i += 5) {
			synchronized (this.commitOrder) {
				OutboxFixtures.publishInOneTransaction(context, (outbox) -> {
					for (int j = 0; j < 5; j++) {
						int next = this.sequence.getAndIncrement();
						String key = "key-" + (next % KEYS);
						String value = key + ":" + next;
						this.published.put(value, outbox.publish(topic, key, value).toString());
					}
				});
			}
		}
	}

	private static boolean active(ConfigurableApplicationContext context) {
		return context.isActive() && context.getBean(OutboxReplicationRelay.class).isActive();
	}

	private static String topic() {
		String topic = "it-repl-failover-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 3);
		return topic;
	}

}
