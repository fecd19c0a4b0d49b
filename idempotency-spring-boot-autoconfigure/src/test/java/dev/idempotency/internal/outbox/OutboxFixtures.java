package dev.idempotency.internal.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestConsumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What the outbox tests share: an application that writes and relays events on an outbox
 * table of its own, the producer settings under which a send that cannot succeed fails
 * within about a second, and writing events in a transaction.
 */
final class OutboxFixtures {

	/**
	 * Producer settings under which a send to a topic that cannot take it fails after half
	 * a second and an unacknowledged one after 1.5 seconds, rather than after a minute.
	 */
	static final String[] QUICK_FAILING_SENDS = { "spring.kafka.producer.properties[max.block.ms]=500",
			"spring.kafka.producer.properties[delivery.timeout.ms]=1500",
			"spring.kafka.producer.properties[request.timeout.ms]=1000" };

	private OutboxFixtures() {
	}

	/**
	 * The properties of an application without JPA whose outbox is the table
	 * {@code <name>_outbox} (with {@code <name>_schema_history} as its migration history).
	 * @param name the prefix of the tables
	 * @param properties more properties, as {@code name=value}
	 * @return the properties
	 */
	static String[] onTable(String name, String... properties) {
		List<String> all = new ArrayList<>(List.of(TestApplications.WITHOUT_JPA, "idempotency.outbox.table=" + name
				+ "_outbox", "idempotency.flyway.table=" + name + "_schema_history"));
		all.addAll(Arrays.asList(properties));
		return all.toArray(String[]::new);
	}

	/**
	 * The properties of an application without JPA that runs the relay on the outbox table
	 * {@code <name>_outbox}.
	 * @param name the prefix of the tables
	 * @param properties more properties, as {@code name=value}
	 * @return the properties
	 * @see #onTable(String, String...)
	 */
	static String[] relayOn(String name, String... properties) {
		List<String> all = new ArrayList<>(List.of(TestApplications.WITH_RELAY));
		all.addAll(Arrays.asList(properties));
		return onTable(name, all.toArray(String[]::new));
	}

	/**
	 * The given properties followed by {@link #QUICK_FAILING_SENDS}.
	 * @param properties the properties
	 * @return the properties
	 */
	static String[] withQuickFailingSends(String... properties) {
		List<String> all = new ArrayList<>(Arrays.asList(properties));
		all.addAll(Arrays.asList(QUICK_FAILING_SENDS));
		return all.toArray(String[]::new);
	}

	/**
	 * Start an application that runs the relay on the outbox table {@code <name>_outbox}.
	 * @param configuration the configuration class, {@link Writer} for one that only writes
	 * @param name the prefix of the tables
	 * @param properties more properties, as {@code name=value}
	 * @return the running application
	 */
	static ConfigurableApplicationContext runRelay(Class<?> configuration, String name, String... properties) {
		return TestApplications.run(configuration, relayOn(name, properties));
	}

	/**
	 * Publish one event in a transaction of its own.
	 * @param context the application
	 * @param topic the topic
	 * @param key the key
	 * @param payload the payload
	 * @return the event id
	 */
	static UUID publish(ApplicationContext context, String topic, String key, String payload) {
		return context.getBean(TransactionTemplate.class)
			.execute((status) -> context.getBean(Outbox.class).publish(topic, key, payload));
	}

	/**
	 * Publish events in one transaction.
	 * @param context the application
	 * @param events what publishes the events
	 */
	static void publishInOneTransaction(ApplicationContext context, Consumer<Outbox> events) {
		Outbox outbox = context.getBean(Outbox.class);
		context.getBean(TransactionTemplate.class).executeWithoutResult((status) -> events.accept(outbox));
	}

	/**
	 * Publish, in one transaction, an event of key {@code key} too large for a topic whose
	 * {@code max.message.bytes} is 2000, then five small events of five other keys
	 * ({@code small-0} to {@code small-4}): the relay sends them in one wave.
	 * @param context the application
	 * @param topic the topic
	 * @return the id of the large event
	 */
	static UUID publishTooLargeBesideOthers(ApplicationContext context, String topic) {
		Outbox outbox = context.getBean(Outbox.class);
		return context.getBean(TransactionTemplate.class).execute((status) -> {
			UUID id = outbox.publish(topic, "key", "L".repeat(10_000));
			for (int i = 0; i < 5; i++) {
				outbox.publish(topic, "other-" + i, "small-" + i);
			}
			return id;
		});
	}

	/**
	 * Assert that the event {@link #publishTooLargeBesideOthers} published too large is
	 * parked {@code DEAD} with the broker's refusal as its error, and that the small events
	 * beside it arrive.
	 * @param jdbc a template on the outbox's database
	 * @param table the outbox table
	 * @param tooLarge the large event
	 * @param consumer a consumer of the topic
	 */
	static void assertTooLargeParkedAndOthersPublished(JdbcTemplate jdbc, String table, UUID tooLarge,
			TestConsumer consumer) {
		await().atMost(Duration.ofSeconds(30)).until(() -> "DEAD".equals(status(jdbc, table, tooLarge)));
		assertThat(jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE event_id = ?", String.class,
				tooLarge))
			.contains("RecordTooLargeException");
		List<ConsumerRecord<String, String>> received = consumer.receiveUntil(
				(records) -> records.stream().map(ConsumerRecord::value).distinct().count() >= 5,
				Duration.ofSeconds(30));
		assertThat(received).extracting(ConsumerRecord::value)
			.containsOnly("small-0", "small-1", "small-2", "small-3", "small-4");
	}

	/**
	 * The status of an event.
	 * @param jdbc a template on the outbox's database
	 * @param table the outbox table
	 * @param eventId the event id
	 * @return its status, {@code null} when its row is gone
	 */
	static String status(JdbcTemplate jdbc, String table, UUID eventId) {
		return jdbc.queryForList("SELECT status FROM " + table + " WHERE event_id = ?", String.class, eventId)
			.stream()
			.findFirst()
			.orElse(null);
	}

	/**
	 * Assert that the records of each key, whose values are increasing sequence numbers
	 * when published, arrived in that order.
	 * @param records the records received
	 */
	static void assertInOrderPerKey(List<ConsumerRecord<String, String>> records) {
		Map<String, Integer> lastByKey = new HashMap<>();
		for (ConsumerRecord<String, String> record : records) {
			int sequence = Integer.parseInt(record.value());
			Integer last = lastByKey.put(record.key(), sequence);
			if (last != null) {
				assertThat(sequence).as("order of %s", record.key()).isGreaterThan(last);
			}
		}
	}

	static void sleep(Duration duration) {
		try {
			Thread.sleep(duration.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	/**
	 * An application that writes and relays events, with no beans of its own.
	 */
	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class Writer {

	}

}
