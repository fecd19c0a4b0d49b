package dev.idempotency.internal.web;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyContext;
import dev.idempotency.internal.key.CurrentHandling;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestThreads;
import jakarta.servlet.http.HttpServletRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.ResponseEntity;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code @Idempotent(mode = LEASE)} Spring MVC handlers, whose effects are outside the
 * database, on a real Tomcat, PostgreSQL and Kafka: a live lease answers 409, an expired
 * one is taken over with a larger fencing token, and the events both runs publish carry
 * the same keys, so that their consumer applies them once.
 */
class IdempotentLeaseHandlerIntegrationTests {

	static final String TOPIC = "web-charges";

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Charges.class, ChargeEvents.class)
		.web()
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, TestApplications.WITH_RELAY, "test.effects-table=web_lease_effects",
				"idempotency.outbox.table=web_lease_outbox", "idempotency.flyway.table=web_lease_schema_history",
				"spring.kafka.consumer.auto-offset-reset=earliest");

	@Test
	void answers409WhileTheLeaseIsLiveThenReplays() throws Exception {
		String key = UUID.randomUUID().toString();
		Charges.hold = new CountDownLatch(1);
		Charges.entered = new CountDownLatch(1);
		CompletableFuture<HttpResponse<String>> first = TestThreads
			.supplyAsync(() -> post("/held", key, "{\"amount\": 5}"));
		assertThat(Charges.entered.await(10, TimeUnit.SECONDS)).isTrue();
		HttpResponse<String> concurrent = post("/held", key, "{\"amount\": 5}");
		assertThat(concurrent.statusCode()).isEqualTo(409);
		assertThat(concurrent.body()).contains("\"code\":\"idempotency-key-in-progress\"");
		HttpResponse<String> other = post("/held", key, "{\"amount\": 6}");
		assertThat(other.statusCode()).isEqualTo(422);
		Charges.hold.countDown();
		HttpResponse<String> done = first.get(10, TimeUnit.SECONDS);
		assertThat(done.statusCode()).isEqualTo(201);
		HttpResponse<String> replay = post("/held", key, "{\"amount\": 5}");
		assertThat(replay.statusCode()).isEqualTo(201);
		assertThat(replay.body()).isEqualTo(done.body());
		assertThat(replay.headers().firstValue(StoredResponse.REPLAYED)).hasValue("true");
	}

	@Test
	void takesAnExpiredLeaseOverAndItsEventsAreAppliedOnce() throws Exception {
		String key = UUID.randomUUID().toString();
		Charges.tokens.clear();
		Charges.hold = new CountDownLatch(1);
		Charges.entered = new CountDownLatch(1);
		Charges.holdFirst = true;
		CompletableFuture<HttpResponse<String>> stalled = TestThreads
			.supplyAsync(() -> post("/charges", key, "{\"amount\": 5}"));
		assertThat(Charges.entered.await(10, TimeUnit.SECONDS)).isTrue();
		Thread.sleep(1500);
		// the lease of the stalled request ran out: a retry takes the key over
		HttpResponse<String> retry = post("/charges", key, "{\"amount\": 5}");
		assertThat(retry.statusCode()).isEqualTo(201);
		Charges.hold.countDown();
		// the stalled request lost its lease: it answers what the key's owner stored
		HttpResponse<String> late = stalled.get(10, TimeUnit.SECONDS);
		assertThat(late.statusCode()).isEqualTo(201);
		assertThat(late.body()).isEqualTo(retry.body());
		assertThat(late.headers().firstValue(StoredResponse.REPLAYED)).hasValue("true");
		assertThat(Charges.tokens).hasSize(2);
		assertThat(Charges.tokens.get(1)).isGreaterThan(Charges.tokens.get(0));
		// both runs published the same two events, with the same ids: applied once each
		await().atMost(TestApplication.TIMEOUT)
			.untilAsserted(() -> assertThat(ChargeEvents.received.stream().filter((value) -> value.startsWith(key)))
				.hasSize(4));
		app.awaitCommitted(TOPIC + "-applied", TOPIC);
		String scope = "http POST /charges";
		assertThat(ChargeEvents.ids).contains(CurrentHandling.eventId(scope, key, TOPIC, 0),
				CurrentHandling.eventId(scope, key, TOPIC, 1));
		assertThat(app.jdbc().queryForList("SELECT message_key FROM web_lease_effects WHERE message_key LIKE ?",
				String.class, key + "%")).containsExactlyInAnyOrder(key + " 1", key + " 2");
	}

	@Test
	void aRequestRetriedThreeTimesGivesItsTwoEventsAndTwoEffects() {
		String key = UUID.randomUUID().toString();
		HttpResponse<String> first = post("/orders", key, "{\"amount\": 7}");
		for (int retry = 0; retry < 3; retry++) {
			HttpResponse<String> again = post("/orders", key, "{\"amount\": 7}");
			assertThat(again.body()).isEqualTo(first.body());
			assertThat(again.headers().firstValue(StoredResponse.REPLAYED)).hasValue("true");
		}
		await().atMost(TestApplication.TIMEOUT)
			.untilAsserted(() -> assertThat(app.rows(
					"SELECT count(*) FROM web_lease_effects WHERE message_key LIKE ?", key + "%")).isEqualTo(2));
		app.awaitCommitted(TOPIC + "-applied", TOPIC);
		assertThat(ChargeEvents.received.stream().filter((value) -> value.startsWith(key))).hasSize(2);
		assertThat(app.jdbc().queryForList("SELECT message_key FROM web_lease_effects WHERE message_key LIKE ?",
				String.class, key + "%")).containsExactlyInAnyOrder(key + " 1", key + " 2");
	}

	@Test
	void derivesTheSameEventIdsAfterARolledBackTransaction() {
		String key = UUID.randomUUID().toString();
		TransactionTemplate transactions = app.bean(TransactionTemplate.class);
		Outbox outbox = app.bean(Outbox.class);
		Object handling = CurrentHandling.bind("ids", key);
		try {
			transactions.executeWithoutResult((status) -> {
				outbox.publish(TOPIC, key, key + " rolled back");
				status.setRollbackOnly();
			});
			UUID first = transactions.execute((status) -> outbox.publish(TOPIC, key, key + " 1"));
			UUID second = transactions.execute((status) -> outbox.publish(TOPIC, key, key + " 2"));
			assertThat(first).isEqualTo(CurrentHandling.eventId("ids", key, TOPIC, 0));
			assertThat(second).isEqualTo(CurrentHandling.eventId("ids", key, TOPIC, 1));
		}
		finally {
			CurrentHandling.restore(handling);
		}
	}

	static HttpResponse<String> post(String path, String key, String body) {
		return TestHttp.post(app.uri(path), key, body);
	}

	@RestController
	static class Charges {

		static final List<Long> tokens = new CopyOnWriteArrayList<>();

		static volatile CountDownLatch hold = new CountDownLatch(0);

		static volatile CountDownLatch entered = new CountDownLatch(0);

		static volatile boolean holdFirst;

		@Autowired
		Outbox outbox;

		@Autowired
		TransactionTemplate transactions;

		@PostMapping("/held")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "30s")
		ResponseEntity<String> held() throws InterruptedException {
			entered.countDown();
			hold.await(10, TimeUnit.SECONDS);
			return ResponseEntity.status(201).body("held " + UUID.randomUUID());
		}

		@PostMapping("/orders")
		@Idempotent
		ResponseEntity<String> order(HttpServletRequest request) {
			String key = request.getHeader("Idempotency-Key");
			this.outbox.publish(TOPIC, key, key + " 1");
			this.outbox.publish(TOPIC, key, key + " 2");
			return ResponseEntity.status(201).body("ordered " + UUID.randomUUID());
		}

		@PostMapping("/charges")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s")
		ResponseEntity<String> charge(HttpServletRequest request) throws InterruptedException {
			String key = request.getHeader("Idempotency-Key");
			tokens.add(IdempotencyContext.fencingToken());
			this.transactions.executeWithoutResult((status) -> {
				this.outbox.publish(TOPIC, key, key + " 1");
				this.outbox.publish(TOPIC, key, key + " 2");
			});
			if (holdFirst) {
				holdFirst = false;
				entered.countDown();
				hold.await(10, TimeUnit.SECONDS);
			}
			return ResponseEntity.status(201).body("charged " + IdempotencyContext.fencingToken());
		}

	}

	static class ChargeEvents extends RecordingListener {

		static final List<UUID> ids = new CopyOnWriteArrayList<>();

		static final List<String> received = new CopyOnWriteArrayList<>();

		@KafkaListener(id = TOPIC, topics = TOPIC, groupId = TOPIC)
		void receive(String value, @Header(TestApplication.KEY_HEADER) String eventId) {
			received.add(value);
			ids.add(UUID.fromString(eventId));
		}

		@KafkaListener(id = TOPIC + "-applied", topics = TOPIC, groupId = TOPIC + "-applied")
		@Idempotent
		void apply(String value) {
			effects().add("charges", value);
		}

	}

}
