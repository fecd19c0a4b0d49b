package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Per-key order when one event of a batch fails on its own while the events around it
 * would be accepted, against a real Kafka broker.
 */
class OutboxKeyOrderIntegrationTests {

	/**
	 * The broker refuses an event larger than its topic's {@code max.message.bytes} and
	 * accepts the small events around it. The later event of the key must wait for the
	 * refused one: it is not sent while the refused event is dead, and follows it once
	 * the topic takes it and the dead event is re-queued.
	 */
	@Test
	void anEventTheBrokerRefusesHoldsBackTheLaterEventsOfItsKeyButNotOtherKeys() throws Exception {
		String topic = "it-outbox-too-large-" + UUID.randomUUID();
		try (Admin admin = admin()) {
			admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1)
				.configs(Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "2000")))).all().get();
		}
		try (ConfigurableApplicationContext context = TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				TestApplications.WITH_RELAY, "idempotency.outbox.table=keyorder_outbox",
				"idempotency.flyway.table=keyorder_schema_history", "idempotency.outbox.max-attempts=1",
				"idempotency.outbox.poll-interval=200ms");
				TestConsumer consumer = new TestConsumer(topic)) {
			OutboxRelay relay = context.getBean(OutboxRelay.class);
			relay.stop();
			Outbox outbox = context.getBean(Outbox.class);
			String large = "L".repeat(10_000);
			// one transaction: the relay claims the four events in one batch
			UUID tooLarge = context.getBean(TransactionTemplate.class).execute((status) -> {
				outbox.publish(topic, "key", "first");
				UUID id = outbox.publish(topic, "key", large);
				outbox.publish(topic, "key", "third");
				outbox.publish(topic, "other-key", "unrelated");
				return id;
			});
			relay.start();
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(Duration.ofSeconds(30))
				.until(() -> "DEAD".equals(jdbc.queryForObject("SELECT status FROM keyorder_outbox WHERE event_id = ?",
						String.class, tooLarge)));
			// whatever else was going to arrive, arrives in this time
			List<ConsumerRecord<String, String>> received = consumer.receive(3, Duration.ofSeconds(5));
			assertThat(received).extracting(ConsumerRecord::value).containsExactlyInAnyOrder("first", "unrelated");
			assertThat(jdbc.queryForObject("SELECT status FROM keyorder_outbox WHERE aggregate_id = 'key' AND "
					+ "convert_from(payload, 'UTF8') LIKE '%third%'", String.class)).isEqualTo("PENDING");

			// the topic takes the event now; once re-queued, the key resumes in order
			try (Admin admin = admin()) {
				admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, topic),
						List.of(new AlterConfigOp(new ConfigEntry(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "100000"),
								AlterConfigOp.OpType.SET))))
					.all()
					.get();
			}
			assertThat(context.getBean(OutboxDeadLetters.class).requeue(tooLarge)).isTrue();
			List<ConsumerRecord<String, String>> all = consumer.receive(4, Duration.ofSeconds(30));
			assertThat(all).filteredOn((record) -> "key".equals(record.key()))
				.extracting(ConsumerRecord::value)
				.containsExactly("first", large, "third");
		}
	}

	private static Admin admin() {
		return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, TestInfrastructure.kafkaBootstrapServers()));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

	}

}
