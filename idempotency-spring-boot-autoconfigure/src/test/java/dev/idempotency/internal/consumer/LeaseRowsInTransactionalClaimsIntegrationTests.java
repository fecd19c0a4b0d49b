package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.UUID;

import dev.idempotency.Idempotent;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A transactional listener whose key is held by a lease-mode claim of the same scope that
 * is still in progress waits for it, as a lease-mode listener does, instead of skipping
 * the record as a duplicate of work that may yet be released: skipped, the record would be
 * acknowledged and never applied.
 */
class LeaseRowsInTransactionalClaimsIntegrationTests {

	private static final String GROUP = "lease-rows";

	private static final String TOPIC = "it-lease-rows-" + UUID.randomUUID();

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Listener.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=lease_rows_effects", "test.topic=" + TOPIC,
				"idempotency.infrastructure-retry.initial-interval=200ms",
				"idempotency.infrastructure-retry.max-interval=500ms");

	@Test
	void waitsForALeaseInProgressAndAppliesTheRecordOnceItIsReleased() {
		String key = "held-" + UUID.randomUUID();
		JdbcTemplate jdbc = app.jdbc();
		TestEffects effects = app.bean(TestEffects.class);
		// a lease-mode consumer of the same scope is working on the key
		jdbc.update("INSERT INTO processed_messages (consumer_group, idempotency_key, status, fencing_token, "
				+ "lease_until) VALUES (?, ?, 'IN_PROGRESS', 1, now() + interval '1 minute')", GROUP, key);
		app.send(TOPIC, key, key);

		// neither applied nor acknowledged while the lease is held
		await().during(Duration.ofSeconds(3))
			.atMost(Duration.ofSeconds(10))
			.until(() -> effects.count(GROUP, key) == 0
					&& TestKafka.committedOffset(GROUP, new TopicPartition(TOPIC, 0)) <= 0);

		// the lease-mode attempt fails and releases its claim
		jdbc.update("DELETE FROM processed_messages WHERE consumer_group = ? AND idempotency_key = ?", GROUP, key);
		app.awaitCommitted(GROUP, TOPIC);
		assertThat(effects.count(GROUP, key)).isEqualTo(1);
	}

	static class Listener extends RecordingListener {

		@KafkaListener(topics = "${test.topic}", groupId = GROUP)
		@Idempotent
		public void apply(String key) {
			effects().add(GROUP, key);
		}

	}

}
