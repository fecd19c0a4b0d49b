package dev.idempotency.internal.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.idempotency.outbox.OutboxProducerFactoryCustomizer;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The relay claims the next batch while a full batch is being sent, against a real
 * PostgreSQL and Kafka broker, and the batch claimed ahead holds no key of the batch in
 * flight.
 */
@ExtendWith(OutputCaptureExtension.class)
class OutboxClaimAheadIntegrationTests {

	@Test
	void theNextBatchIsClaimedWhileABatchIsInFlightWithoutTheKeysInFlight() throws Exception {
		String topic = "it-outbox-claim-ahead-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1);
		BlockingInterceptor.reset();
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(App.class, "ahead",
				"idempotency.outbox.batch-size=2", "idempotency.outbox.claim-ahead=true");
				TestConsumer consumer = new TestConsumer(topic)) {
			relayUntilTheFirstSendIsHeld(context, topic, "k1", "k2", "k1-second", "k3", "k4");
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			try {
				// the first batch (k1-first, k2-first) is in flight, held in the send of
				// k1-first; the batch claimed meanwhile skips k1-second (its key is in
				// flight) and takes the next two: two claims, no key held by both
				await().atMost(Duration.ofSeconds(10))
					.untilAsserted(() -> assertThat(heldKeys(jdbc, "ahead_outbox"))
						.containsExactlyInAnyOrder("k1", "k2", "k3", "k4"));
				assertThat(jdbc.queryForObject("SELECT count(*) FROM ahead_outbox_claims", Integer.class))
					.isEqualTo(2);
			}
			finally {
				BlockingInterceptor.release.countDown();
			}
			List<ConsumerRecord<String, String>> received = consumer.receive(5, Duration.ofSeconds(30));
			assertThat(received).extracting(ConsumerRecord::value)
				.map((value) -> value.replace(" " + BlockingInterceptor.BLOCK, ""))
				.containsExactlyInAnyOrder("k1-first", "k2-first", "k1-second", "k3-first", "k4-first");
			assertThat(received).filteredOn((record) -> "k1".equals(record.key()))
				.extracting(ConsumerRecord::value)
				.map((value) -> value.replace(" " + BlockingInterceptor.BLOCK, ""))
				.containsExactly("k1-first", "k1-second");
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM ahead_outbox", Integer.class) == 0);
		}
	}

	/**
	 * A batch claimed ahead whose wait left it less lease than a fresh claim has is given
	 * back instead of being sent: here the batch in flight is held past its send timeout,
	 * longer than the one second the batch claimed ahead may wait.
	 */
	@Test
	void aBatchClaimedAheadThatWaitedTooLongIsGivenBackAndSentByALaterClaim(CapturedOutput output)
			throws Exception {
		String topic = "it-outbox-claim-ahead-late-" + UUID.randomUUID();
		TestInfrastructure.createTopic(topic, 1);
		BlockingInterceptor.reset();
		try (ConfigurableApplicationContext context = OutboxFixtures.runRelay(App.class, "late_ahead",
				"idempotency.outbox.batch-size=2", "idempotency.outbox.send-timeout=1s", "idempotency.outbox.lease=3s",
				"idempotency.outbox.initial-backoff=100ms", "idempotency.outbox.claim-ahead=true");
				TestConsumer consumer = new TestConsumer(topic)) {
			relayUntilTheFirstSendIsHeld(context, topic, "k1", "k2", "k3", "k4");
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(Duration.ofSeconds(10))
				.untilAsserted(() -> assertThat(heldKeys(jdbc, "late_ahead_outbox")).contains("k3", "k4"));
			Thread.sleep(1500);
			BlockingInterceptor.release.countDown();
			await().atMost(Duration.ofSeconds(20))
				.untilAsserted(() -> assertThat(output.getOut()).contains("to be sent; its leases are given back"));
			// k1-first may come twice (sent again after its send timed out): wait for every
			// event, not for a count
			List<String> events = List.of("k1-first", "k2-first", "k3-first", "k4-first");
			List<ConsumerRecord<String, String>> received = consumer.receiveUntil(
					(records) -> values(records).containsAll(events), Duration.ofSeconds(30));
			assertThat(values(received)).containsAll(events);
		}
	}

	private static List<String> values(List<ConsumerRecord<String, String>> records) {
		return records.stream().map((record) -> record.value().replace(" " + BlockingInterceptor.BLOCK, "")).toList();
	}

	/**
	 * Write one event per key in one transaction while the relay is stopped (a key given
	 * as {@code k1-second} writes the second event of {@code k1}), start the relay, and
	 * wait until the send of the first event ({@code k1-first}) is held.
	 */
	private static void relayUntilTheFirstSendIsHeld(ConfigurableApplicationContext context, String topic,
			String... keys) throws InterruptedException {
		OutboxRelay relay = context.getBean(OutboxRelay.class);
		relay.stop();
		OutboxFixtures.publishInOneTransaction(context, (outbox) -> {
			for (String key : keys) {
				String payload = key.contains("-") ? key : key + "-first";
				if (payload.equals("k1-first")) {
					payload += " " + BlockingInterceptor.BLOCK;
				}
				outbox.publish(topic, key.split("-")[0], payload);
			}
		});
		relay.start();
		assertThat(BlockingInterceptor.blocked.await(30, TimeUnit.SECONDS)).isTrue();
	}

	/**
	 * The keys each live claim holds, once per claim: a key held by two claims is listed
	 * twice.
	 */
	private static List<String> heldKeys(JdbcTemplate jdbc, String table) {
		return jdbc.queryForList("SELECT DISTINCT c.id, o.aggregate_id FROM " + table + "_claims c JOIN " + table
				+ " o ON hashtext(coalesce(o.aggregate_id, o.id::text)) = ANY(c.key_hashes) WHERE c.lease_until >= now()")
			.stream()
			.map((row) -> (String) row.get("aggregate_id"))
			.toList();
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		OutboxProducerFactoryCustomizer blockingInterceptor() {
			return (factory) -> factory
				.updateConfigs(Map.of(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG, BlockingInterceptor.class.getName()));
		}

	}

	/**
	 * Holds the send of the event marked {@link #BLOCK} (on the relay's thread, inside
	 * {@code send}) until released.
	 */
	public static class BlockingInterceptor implements ProducerInterceptor<String, byte[]> {

		static final String BLOCK = "[block]";

		static volatile CountDownLatch blocked = new CountDownLatch(1);

		static volatile CountDownLatch release = new CountDownLatch(1);

		static void reset() {
			blocked = new CountDownLatch(1);
			release = new CountDownLatch(1);
		}

		@Override
		public ProducerRecord<String, byte[]> onSend(ProducerRecord<String, byte[]> record) {
			if (record.value() != null && new String(record.value(), StandardCharsets.UTF_8).contains(BLOCK)) {
				blocked.countDown();
				try {
					release.await(30, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
			return record;
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
