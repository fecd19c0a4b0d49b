package dev.idempotency.sample;

import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import java.util.stream.Collectors;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Measurement;
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
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.stereotype.Component;

/**
 * {@code --demo}: requests payments over HTTP and injects duplicates the ways production
 * does (a client retrying with the same {@code Idempotency-Key}, a relay or producer
 * sending an event twice, a consumer replaying from an old offset, Redis going away for a
 * few seconds), waits until everything drained, prints a {@link DemoVerdict} and exits 0
 * only when it holds.
 */
@Component
@ConditionalOnProperty(name = "demo")
class Demo implements ApplicationRunner {

	private static final Log logger = LogFactory.getLog(Demo.class);

	private final ConfigurableApplicationContext context;

	private final Environment environment;

	private final AccountRepository accounts;

	private final JdbcTemplate jdbc;

	private final KafkaTemplate<String, String> kafka;

	private final KafkaAdmin kafkaAdmin;

	private final KafkaListenerEndpointRegistry listeners;

	private final MeterRegistry meters;

	private final JsonMapper json;

	private final @Nullable EmbeddedServers servers;

	private final HttpClient http = HttpClient.newHttpClient();

	private final int payments;

	private final Duration timeout;

	private final boolean exit;

	private @Nullable DemoVerdict verdict;

	Demo(ConfigurableApplicationContext context, AccountRepository accounts, JdbcTemplate jdbc,
			KafkaTemplate<String, String> kafka, KafkaAdmin kafkaAdmin, KafkaListenerEndpointRegistry listeners,
			MeterRegistry meters, JsonMapper json, ObjectProvider<EmbeddedServers> servers,
			@Value("${demo.payments:3000}") int payments, @Value("${demo.timeout:180s}") Duration timeout,
			@Value("${demo.exit:true}") boolean exit) {
		this.context = context;
		this.environment = context.getEnvironment();
		this.accounts = accounts;
		this.jdbc = jdbc;
		this.kafka = kafka;
		this.kafkaAdmin = kafkaAdmin;
		this.listeners = listeners;
		this.meters = meters;
		this.json = json;
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
		// the payments of this run are those created since (they no longer carry their key)
		OffsetDateTime since = this.jdbc.queryForObject("SELECT clock_timestamp()", OffsetDateTime.class);
		List<Account> all = this.accounts.findAll();
		Random random = new Random(42);
		String base = "http://localhost:" + this.environment.getProperty("local.server.port", "8080");
		logger.info("Demo " + run + ": " + this.payments + " payments");
		Traffic traffic = new Traffic();
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
			String body = "{\"account\":\"%s\",\"amount\":%s,\"currency\":\"%s\"}".formatted(account.getId(),
					amount, account.getCurrency());
			String key = "demo-" + run + "-" + i;
			String first = post(base, key, body);
			if (i % 10 == 0) {
				traffic.httpRetries++;
				if (!first.equals(post(base, key, body))) {
					traffic.answeredDifferently++;
				}
			}
			if (i == half && traffic.redisOutage) {
				Thread.sleep(3000);
				this.servers.restartRedis();
				logger.info("Demo: Redis is back, empty");
			}
		}
		traffic.resent = resendEvents(since);
		traffic.replayed = replayFromStart(since);
		boolean drained = awaitDrained(since, System.nanoTime() + this.timeout.toNanos());
		return verdict(since, traffic, drained, Duration.ofNanos(System.nanoTime() - start));
	}

	private String post(String base, String key, String body) throws Exception {
		HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/payments"))
			.header("Content-Type", "application/json")
			.header(PaymentController.IDEMPOTENCY_KEY, key)
			.POST(HttpRequest.BodyPublishers.ofString(body))
			.build();
		HttpResponse<String> response = this.http.send(request, HttpResponse.BodyHandlers.ofString());
		if (response.statusCode() != 201) {
			throw new IllegalStateException("POST /payments answered " + response.statusCode() + ": " + response.body());
		}
		return response.body();
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
		awaitLedgerEntries(since, this.payments / 2);
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

	private void awaitLedgerEntries(OffsetDateTime since, long count) throws InterruptedException {
		long deadline = System.nanoTime() + this.timeout.toNanos();
		while (ledgerEntries(since) < count && System.nanoTime() < deadline) {
			Thread.sleep(100);
		}
	}

	private long ledgerEntries(OffsetDateTime since) {
		return this.jdbc.queryForObject("""
				SELECT count(*) FROM ledger_entries l JOIN payments p ON p.id = l.payment_id
				WHERE p.created_at >= ?""", Long.class, since);
	}

	private boolean awaitDrained(OffsetDateTime since, long deadline) throws Exception {
		try (Admin admin = Admin.create(this.kafkaAdmin.getConfigurationProperties())) {
			while (System.nanoTime() < deadline) {
				if (ledgerEntries(since) >= this.payments && outboxEmpty() && caughtUp(admin, PaymentListener.ID)
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

	private DemoVerdict verdict(OffsetDateTime since, Traffic traffic, boolean drained, Duration took) {
		Map<String, BigDecimal> expected = new TreeMap<>();
		Map<String, BigDecimal> actual = new TreeMap<>();
		this.jdbc.query("""
				SELECT a.id, a.balance, a.opening_balance - coalesce(sum(p.amount), 0) AS expected
				FROM accounts a LEFT JOIN payments p ON p.account_id = a.id AND p.status <> 'REJECTED'
				GROUP BY a.id, a.balance, a.opening_balance""", (row) -> {
			expected.put(row.getString("id"), row.getBigDecimal("expected"));
			actual.put(row.getString("id"), row.getBigDecimal("balance"));
		});
		long created = this.jdbc.queryForObject("SELECT count(*) FROM payments WHERE created_at >= ?", Long.class,
				since);
		long notOneEntry = this.jdbc.queryForObject("""
				SELECT count(*) FROM payments p
				WHERE p.created_at >= ?
				AND (SELECT count(*) FROM ledger_entries l WHERE l.payment_id = p.id) <> 1""", Long.class, since);
		long notOneLine = this.jdbc.queryForObject("""
				SELECT count(*) FROM payments p
				WHERE p.created_at >= ?
				AND (SELECT count(*) FROM statement_lines s WHERE s.payment_id = p.id) <> 1""", Long.class, since);
		return new DemoVerdict(this.payments, created, traffic.httpRetries, traffic.answeredDifferently,
				traffic.resent, traffic.replayed, traffic.redisOutage, expected, actual, notOneEntry, notOneLine,
				duplicates("cache"), duplicates("store"), sum("idempotency.outbox.published"), drained, took,
				starterMeters());
	}

	private double duplicates(String source) {
		return this.meters.find("idempotency.messages")
			.tag("listener", "PaymentListener.onPayment")
			.tag("outcome", "duplicate")
			.tag("source", source)
			.counters()
			.stream()
			.mapToDouble(Counter::count)
			.sum();
	}

	private double sum(String name) {
		return this.meters.find(name).counters().stream().mapToDouble(Counter::count).sum();
	}

	private List<String> starterMeters() {
		List<String> lines = new ArrayList<>();
		for (Meter meter : this.meters.getMeters()) {
			if (meter.getId().getName().startsWith("idempotency.")) {
				StringBuilder line = new StringBuilder(meter.getId().getName());
				meter.getId().getTags().forEach((tag) -> line.append(' ').append(tag.getKey()).append('=').append(tag.getValue()));
				for (Measurement measurement : meter.measure()) {
					line.append(" | ")
						.append(measurement.getStatistic().getTagValueRepresentation())
						.append(' ')
						.append(String.format("%.4g", measurement.getValue()));
				}
				lines.add(line.toString());
			}
		}
		lines.sort(null);
		return lines;
	}

	private static final class Traffic {

		int httpRetries;

		int answeredDifferently;

		int resent;

		long replayed;

		boolean redisOutage;

	}

}
