package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What the relay does with what it cannot control: an application producer that spreads
 * records over partitions, a row that did not come from {@code Outbox.publish}, and an
 * {@code Error} on its thread.
 */
@ExtendWith(OutputCaptureExtension.class)
class OutboxRelayRobustnessIntegrationTests {

	/**
	 * An application whose own producer spreads records over partitions whatever their key
	 * ({@code RoundRobinPartitioner}): the relay must not, or consumers of two partitions
	 * would see the events of one key out of order.
	 */
	@Test
	void eventsOfOneKeyReachOnePartitionWhateverTheApplicationsPartitioner() {
		String topic = "it-outbox-round-robin";
		TestInfrastructure.createTopic(topic, 4);
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class,
				"round_robin", "idempotency.outbox.poll-interval=100ms",
				"spring.kafka.producer.properties[partitioner.class]="
						+ "org.apache.kafka.clients.producer.RoundRobinPartitioner")) {
			for (int i = 0; i < 40; i++) {
				// one event per transaction: many batches, each spread anew by the partitioner
				OutboxFixtures.publish(context, topic, "key-" + (i % 2), Integer.toString(i));
			}
			try (TestConsumer consumer = new TestConsumer(topic)) {
				List<ConsumerRecord<String, String>> records = consumer.receive(40, Duration.ofSeconds(60));
				Map<String, Set<Integer>> partitions = new HashMap<>();
				records.forEach((record) -> partitions.computeIfAbsent(record.key(), (key) -> new HashSet<>())
					.add(record.partition()));
				assertThat(partitions).hasSize(2);
				assertThat(partitions.values()).allSatisfy((used) -> assertThat(used).as("partitions of one key").hasSize(1));
			}
		}
	}

	/**
	 * A row written by SQL, not by {@code Outbox.publish}, with a header without a value:
	 * it fails as one event (and backs off, holding back only its own key), and the other
	 * events claimed with it are published.
	 */
	@Test
	void aRowThatCannotBeSentFailsAloneAndTheRestOfItsBatchIsPublished() {
		String topic = "it-outbox-bad-row";
		TestInfrastructure.createTopic(topic, 1);
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "bad_row",
				"idempotency.outbox.poll-interval=100ms", "idempotency.outbox.initial-backoff=1m")) {
			context.getBean(OutboxRelay.class).stop();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			jdbc.update("INSERT INTO bad_row_outbox (event_id, aggregate_id, topic, payload, headers) "
					+ "VALUES (gen_random_uuid(), 'bad', ?, convert_to('bad', 'UTF8'), '{\"tenant\": null}')", topic);
			OutboxFixtures.publishInOneTransaction(context, (outbox) -> {
				for (int i = 0; i < 5; i++) {
					outbox.publish(topic, "good-" + i, Integer.toString(i));
				}
			});
			context.getBean(OutboxRelay.class).start();
			try (TestConsumer consumer = new TestConsumer(topic)) {
				assertThat(consumer.receive(5, Duration.ofSeconds(30))).extracting(ConsumerRecord::key)
					.containsExactlyInAnyOrder("good-0", "good-1", "good-2", "good-3", "good-4");
			}
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM bad_row_outbox", Integer.class) == 1);
			assertThat(jdbc.queryForObject("SELECT attempts FROM bad_row_outbox WHERE aggregate_id = 'bad'",
					Integer.class)).isEqualTo(1);
		}
	}

	/**
	 * An {@code Error} on the relay's thread (here from a producer interceptor, which the
	 * Kafka client does not catch) ends the thread: the relay must say so, in the log and
	 * in {@code isRunning()}, rather than look alive while it publishes nothing.
	 */
	@Test
	void aRelayWhoseThreadDiesOfAnErrorSaysItIsNoLongerRunning(CapturedOutput output) {
		String topic = "it-outbox-error";
		TestInfrastructure.createTopic(topic, 1);
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(OutboxFixtures.Writer.class, "error",
				"idempotency.outbox.poll-interval=100ms",
				"spring.kafka.producer.properties[interceptor.classes]=" + FailingInterceptor.class.getName())) {
			OutboxRelay relay = context.getBean(OutboxRelay.class);
			assertThat(relay.isRunning()).isTrue();
			OutboxFixtures.publish(context, topic, "k", "v");
			await().atMost(Duration.ofSeconds(20)).until(() -> !relay.isRunning());
			assertThat(output).contains("The outbox relay stopped").contains("interceptor failed");
			// its claims are given back: other instances need not wait for their leases
			assertThat(context.getBean(JdbcTemplate.class)
				.queryForObject("SELECT count(*) FROM error_outbox_claims", Integer.class)).isZero();
		}
	}

	/**
	 * Throws an {@code Error} on every send.
	 */
	public static class FailingInterceptor implements ProducerInterceptor<Object, Object> {

		@Override
		public ProducerRecord<Object, Object> onSend(ProducerRecord<Object, Object> record) {
			throw new AssertionError("interceptor failed");
		}

		@Override
		public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
		}

		@Override
		public void close() {
		}

		@Override
		public void configure(Map<String, ?> configs) {
		}

	}

}
