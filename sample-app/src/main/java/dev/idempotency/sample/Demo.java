package dev.idempotency.sample;

import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import java.util.stream.Collectors;

import io.micrometer.core.instrument.MeterRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.stereotype.Component;

/**
 * {@code --demo}: requests payments over HTTP, one in fifty an overdraft the ledger must
 * refuse, and injects duplicates the ways production does (a client retrying with the same
 * {@code Idempotency-Key}, a relay or producer sending an event twice, a consumer replaying
 * from an old offset, Redis going away for a few seconds), waits until everything drained,
 * prints a {@link DemoVerdict} and exits 0 only when it holds ({@code --demo.exit=false}
 * keeps the application running).
 */
@Component
@ConditionalOnProperty(name = "demo")
class Demo implements ApplicationRunner {

	private static final Log logger = LogFactory.getLog(Demo.class);

	private static final String REPLAYED = "Idempotent-Replayed";

	private final ConfigurableApplicationContext context;

	private final Environment environment;

	private final AccountRepository accounts;

	private final JdbcTemplate jdbc;

	private final KafkaTemplate<String, String> kafka;

	private final KafkaAdmin kafkaAdmin;

	private final KafkaListenerEndpointRegistry listeners;

	private final JsonMapper json;

	private final DemoAudit audit;

	private final @Nullable EmbeddedServers servers;

	private final HttpClient http = HttpClient.newHttpClient();

	private final int payments;

	private final Duration timeout;

	private final boolean exit;

	private @Nullable DemoVerdict verdict;

	Demo(ConfigurableApplicationContext context, AccountRepository accounts, JdbcTemplate jdbc,
			KafkaTemplate<String, String> kafka, KafkaAdmin kafkaAdmin, KafkaListenerEndpointRegistry listeners,
			ConsumerFactory<String, String> consumers, MeterRegistry meters, JsonMapper json,
			ObjectProvider<EmbeddedServers> servers, @Value("${demo.payments:3000}") int payments,
			@Value("${demo.timeout:180s}") Duration timeout, @Value("${demo.exit:true}") boolean exit) {
		this.context = context;
		this.environment = context.getEnvironment();
		this.accounts = accounts;
		this.jdbc = jdbc;
		this.kafka = kafka;
		this.kafkaAdmin = kafkaAdmin;
		this.listeners = listeners;
		this.json = json;
		this.audit = new DemoAudit(jdbc, meters, new PublishedEvents(consumers, json));
		this.servers = servers.getIfAvailable();
		this.payments = payments;
		this.timeout = timeout;
		this.exit = exit;
	}

	@Override
	public void run(ApplicationArguments args) throws Exception {
		this.verdict = runDemo();
		this.verdict.print(System.out);
		if (this.exit) {
			int code = this.verdict.holds() ? 0 : 1;
			System.exit(SpringApplication.exit(this.context, () -> code));
		}
	}

	@Nullable DemoVerdict verdict() {
		return this.verdict;
	}

	private DemoVerdict runDemo() throws Exception {
		long start = System.nanoTime();
		String run = UUID.randomUUID().toString().substring(0, 8);
		// the payments of this run are those created since (they do not carry their key)
		Traffic traffic = new Traffic(this.jdbc.queryForObject("SELECT clock_timestamp()", OffsetDateTime.class),
				this.payments, this.audit.replayedRequests());
		List<Account> all = this.accounts.findAll();
		Random random = new Random(42);
		String base = "http://localhost:" + this.environment.getProperty("local.server.port", "8080");
		logger.info("Demo " + run + ": " + this.payments + " payments");
		int quarter = this.payments / 4;
		int half = this.payments / 2;
		for (int i = 0; i < this.payments; i++) {
			if (i == quarter && this.servers != null && this.servers.hasRedis()) {
				logger.info("Demo: stopping Redis for a few seconds");
				this.servers.stopRedis();
				traffic.redisOutage = true;
			}
			Account account = all.get(random.nextInt(all.size()));
			BigDecimal amount = BigDecimal.valueOf(1 + random.nextInt(9999), 2);
			// more than the account ever held: the ledger must refuse it, once
			boolean overdraft = i % 50 == 20;
			if (overdraft) {
				amount = account.getOpeningBalance().add(BigDecimal.ONE);
			}
			String body = "{\"account\":\"%s\",\"amount\":%s,\"currency\":\"%s\"}".formatted(account.getId(),
					amount, account.getCurrency());
			String key = "demo-" + run + "-" + i;
			HttpResponse<String> first = post(base, key, body);
			if (first.headers().firstValue(REPLAYED).isPresent()) {
				traffic.wronglyMarked++;
			}
			if (overdraft) {
				traffic.overdrafts.add(UUID.fromString(this.json.readTree(first.body()).path("id").asString()));
			}
			if (i % 10 == 0) {
				// a client that timed out sends the request again, with its key
				traffic.httpRetries++;
				HttpResponse<String> retry = post(base, key, body);
				if (!first.body().equals(retry.body())) {
					traffic.answeredDifferently++;
				}
				if (!retry.headers().firstValue(REPLAYED).orElse("").equals("true")) {
					traffic.wronglyMarked++;
				}
			}
			if (i == half && traffic.redisOutage) {
				Thread.sleep(3000);
				this.servers.restartRedis();
				logger.info("Demo: Redis is back, empty");
			}
		}
		traffic.resent = resendEvents(traffic.since);
		traffic.replayed = replayFromStart(traffic.since);
		long deadline = System.nanoTime() + this.timeout.toNanos();
		boolean drained = awaitDrained(traffic.since, deadline);
		return this.audit.verdict(traffic, drained, Duration.ofNanos(System.nanoTime() - start));
	}

	private HttpResponse<String> post(String base, String key, String body) throws Exception {
		HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/payments"))
			.header("Content-Type", "application/json")
			.header(PaymentController.IDEMPOTENCY_KEY, key)
			.POST(HttpRequest.BodyPublishers.ofString(body))
			.build();
		HttpResponse<String> response = this.http.send(request, HttpResponse.BodyHandlers.ofString());
		if (response.statusCode() != 201) {
			throw new IllegalStateException("POST /payments answered " + response.statusCode() + ": " + response.body());
		}
		return response;
	}

	// a relay that dies after sending, or a producer retry: the same event, same event id
	private int resendEvents(OffsetDateTime since) throws Exception {
		List<Map<String, Object>> rows = this.jdbc.queryForList("""
				SELECT id, account_id, amount, currency, event_id FROM payments
				WHERE created_at >= ? AND mod(abs(hashtext(id::text)), 20) = 0""", since);
		for (Map<String, Object> row : rows) {
			PaymentRequested event = new PaymentRequested((UUID) row.get("id"), (String) row.get("account_id"),
					(BigDecimal) row.get("amount"), ((String) row.get("currency")).trim());
			ProducerRecord<String, String> record = new ProducerRecord<>(PaymentService.PAYMENTS_TOPIC,
					event.account(), this.json.writeValueAsString(event));
			record.headers()
				.add("X-Idempotency-Key", row.get("event_id").toString().getBytes(StandardCharsets.UTF_8));
			this.kafka.send(record);
		}
		this.kafka.flush();
		logger.info("Demo: sent " + rows.size() + " payment events a second time");
		return rows.size();
	}

	// a consumer restart that replays from an old offset
	private long replayFromStart(OffsetDateTime since) throws Exception {
		awaitDecided(since, this.payments / 2);
		MessageListenerContainer container = this.listeners.getListenerContainer(PaymentListener.ID);
		container.stop();
		long replayed = 0;
		try (Admin admin = Admin.create(this.kafkaAdmin.getConfigurationProperties())) {
			Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(PaymentListener.ID)
				.partitionsToOffsetAndMetadata()
				.get();
			Map<TopicPartition, OffsetAndMetadata> beginning = new TreeMap<>(
					(a, b) -> Integer.compare(a.partition(), b.partition()));
			for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : committed.entrySet()) {
				if (entry.getValue() != null) {
					replayed += entry.getValue().offset();
					beginning.put(entry.getKey(), new OffsetAndMetadata(0));
				}
			}
			for (int attempt = 1;; attempt++) {
				try {
					admin.alterConsumerGroupOffsets(PaymentListener.ID, beginning).all().get();
					break;
				}
				catch (ExecutionException ex) {
					// the group may not be empty yet
					if (attempt == 20) {
						throw ex;
					}
					Thread.sleep(250);
				}
			}
		}
		finally {
			container.start();
		}
		logger.info("Demo: consumer group " + PaymentListener.ID + " reset to offset 0, replaying " + replayed
				+ " records");
		return replayed;
	}

	private void awaitDecided(OffsetDateTime since, long count) throws InterruptedException {
		long deadline = System.nanoTime() + this.timeout.toNanos();
		while (decided(since) < count && System.nanoTime() < deadline) {
			Thread.sleep(100);
		}
	}

	// payments the ledger booked or rejected
	private long decided(OffsetDateTime since) {
		return this.jdbc.queryForObject("SELECT count(*) FROM payments WHERE created_at >= ? AND status <> 'PENDING'",
				Long.class, since);
	}

	private boolean awaitDrained(OffsetDateTime since, long deadline) throws Exception {
		try (Admin admin = Admin.create(this.kafkaAdmin.getConfigurationProperties())) {
			while (System.nanoTime() < deadline) {
				if (decided(since) >= this.payments && outboxEmpty() && caughtUp(admin, PaymentListener.ID)
						&& caughtUp(admin, StatementProjection.ID)) {
					return true;
				}
				Thread.sleep(250);
			}
		}
		return false;
	}

	private boolean outboxEmpty() {
		return this.jdbc.queryForObject("SELECT count(*) FROM outbox WHERE status <> 'SENT'", Long.class) == 0;
	}

	private static boolean caughtUp(Admin admin, String group) throws Exception {
		Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
			.partitionsToOffsetAndMetadata()
			.get();
		Map<TopicPartition, OffsetSpec> latest = committed.keySet()
			.stream()
			.collect(Collectors.toMap(Function.identity(), (partition) -> OffsetSpec.latest()));
		var ends = admin.listOffsets(latest).all().get();
		return !committed.isEmpty() && committed.entrySet()
			.stream()
			.allMatch((entry) -> entry.getValue() != null
					&& entry.getValue().offset() >= ends.get(entry.getKey()).offset());
	}

	/**
	 * What the demo sent, and what its clients saw.
	 */
	static final class Traffic {

		final OffsetDateTime since;

		final int payments;

		final double replayedRequestsBefore;

		final Set<UUID> overdrafts = new HashSet<>();

		int httpRetries;

		int answeredDifferently;

		int wronglyMarked;

		int resent;

		long replayed;

		boolean redisOutage;

		Traffic(OffsetDateTime since, int payments, double replayedRequestsBefore) {
			this.since = since;
			this.payments = payments;
			this.replayedRequestsBefore = replayedRequestsBefore;
		}

	}

}
