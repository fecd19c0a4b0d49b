package dev.idempotency.benchmarks;

import java.io.InputStream;
import java.math.BigDecimal;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.Idempotent;
import dev.idempotency.outbox.Outbox;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The cost of {@code @Idempotent} on an HTTP handler: one web application with the same
 * handler twice, at {@code /plain} and at {@code /idempotent}, on the benchmark's
 * PostgreSQL. The handler does what a payment endpoint does: reads the account, inserts
 * the payment and publishes an event through the outbox, in one transaction. A concurrent
 * client (in this JVM, on keep-alive connections, {@link RawHttpClient}) sends, after a warm-up of each path:
 * requests to the plain handler; requests with new keys to the idempotent one; and the
 * same requests again (all replays). Their order turns with the round, so that neither
 * gains from its place. Prints one {@code RESULT} line.
 */
public final class HttpBenchmark {

	private HttpBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		Properties infrastructure = new Properties();
		try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
			infrastructure.load(in);
		}
		int requests = Integer.parseInt(args[1]);
		int round = (args.length > 2) ? Integer.parseInt(args[2]) : 1;
		int concurrency = Integer.parseInt(System.getenv().getOrDefault("BENCH_HTTP_CONCURRENCY", "8"));
		String run = UUID.randomUUID().toString().substring(0, 8);
		try (ConfigurableApplicationContext context = application(infrastructure, run)) {
			String base = "http://127.0.0.1:" + context.getEnvironment().getProperty("local.server.port");
			ExecutorService executor = Executors.newFixedThreadPool(concurrency);
			try {
				// warm-up: both paths, new keys and replays, on keys of their own
				List<String> warmKeys = keys("warm-" + run, requests / 2);
				measure(base, executor, "/plain", null, requests / 2);
				measure(base, executor, "/idempotent", warmKeys, requests / 2);
				measure(base, executor, "/idempotent", warmKeys, requests / 2);

				List<String> keys = keys(run, requests);
				Map<String, Phase> phases = new java.util.LinkedHashMap<>();
				List<String> order = new ArrayList<>(List.of("plain", "new"));
				if (round % 2 == 0) {
					order = List.of("new", "plain");
				}
				for (String phase : order) {
					phases.put(phase, phase.equals("plain") ? measure(base, executor, "/plain", null, requests)
							: measure(base, executor, "/idempotent", keys, requests));
				}
				phases.put("replay", measure(base, executor, "/idempotent", keys, requests));
				int payments = context.getBean(JdbcTemplate.class)
					.queryForObject("SELECT count(*) FROM bench_http_payments_" + run + " WHERE key LIKE ?",
							Integer.class, run + "-%");
				Phase plain = phases.get("plain");
				Phase created = phases.get("new");
				Phase replay = phases.get("replay");
				System.out.println(String.format(
						"RESULT scenario=HTTP requests=%d concurrency=%d plain=%.0f new=%.0f replay=%.0f newRatio=%.3f "
								+ "replayRatio=%.3f plainP50ms=%.2f plainP99ms=%.2f newP50ms=%.2f newP99ms=%.2f "
								+ "replayP50ms=%.2f replayP99ms=%.2f paymentsOfNewKeys=%d",
						requests, concurrency, plain.rate, created.rate, replay.rate, created.rate / plain.rate,
						replay.rate / plain.rate, plain.p50, plain.p99, created.p50, created.p99, replay.p50, replay.p99,
						payments));
			}
			finally {
				executor.shutdownNow();
			}
		}
	}

	private static List<String> keys(String prefix, int count) {
		List<String> keys = new ArrayList<>(count);
		for (int i = 0; i < count; i++) {
			keys.add(prefix + "-" + i);
		}
		return keys;
	}

	private static Phase measure(String base, ExecutorService executor, String path, List<String> keys, int requests)
			throws Exception {
		URI uri = URI.create(base);
		AtomicInteger next = new AtomicInteger();
		long[] latencies = new long[requests];
		int threads = ((java.util.concurrent.ThreadPoolExecutor) executor).getCorePoolSize();
		List<Future<?>> workers = new ArrayList<>();
		long begin = System.nanoTime();
		for (int t = 0; t < threads; t++) {
			workers.add(executor.submit(() -> {
				try (RawHttpClient client = new RawHttpClient(uri.getHost(), uri.getPort())) {
					for (int i = next.getAndIncrement(); i < requests; i = next.getAndIncrement()) {
						String key = (keys != null) ? keys.get(i) : null;
						String body = "{\"account\":\"acct-" + (i % 100) + "\",\"amount\":" + (1 + i % 500) + ".25,"
								+ "\"key\":\"" + ((key != null) ? key : "plain-" + i) + "\"}";
						long start = System.nanoTime();
						int status = client.post(path, key, body);
						latencies[i] = System.nanoTime() - start;
						if (status != 201) {
							throw new IllegalStateException(path + " answered " + status);
						}
					}
				}
				return null;
			}));
		}
		for (Future<?> worker : workers) {
			worker.get();
		}
		double seconds = (System.nanoTime() - begin) / 1e9;
		Arrays.sort(latencies);
		return new Phase(requests / seconds, latencies[requests / 2] / 1e6, latencies[(int) (requests * 0.99)] / 1e6);
	}

	private static ConfigurableApplicationContext application(Properties infrastructure, String run) {
		return new SpringApplicationBuilder(App.class).web(WebApplicationType.SERVLET)
			.properties("spring.main.banner-mode=off", "logging.level.root=WARN", "server.port=0",
					"spring.datasource.url=" + infrastructure.getProperty("jdbc"), "spring.datasource.username=postgres",
					"spring.datasource.password=postgres",
					"spring.kafka.bootstrap-servers=" + infrastructure.getProperty("kafka"),
					"spring.datasource.hikari.maximum-pool-size=10", "idempotency.outbox.relay-enabled=false",
					"idempotency.cache.enabled=false", "idempotency.outbox.table=outbox_http_" + run,
					"idempotency.flyway.table=schema_history_http_" + run, "bench.run=" + run)
			.run();
	}

	private record Phase(double rate, double p50, double p99) {
	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	@Import({ Payments.class, PaymentController.class })
	static class App {

	}

	/**
	 * What a payment endpoint does, in one transaction.
	 */
	@Service
	static class Payments {

		private final JdbcTemplate jdbc;

		private final Outbox outbox;

		private final String table;

		Payments(JdbcTemplate jdbc, Outbox outbox, org.springframework.core.env.Environment environment) {
			this.jdbc = jdbc;
			this.outbox = outbox;
			String run = environment.getRequiredProperty("bench.run");
			this.table = "bench_http_payments_" + run;
			jdbc.execute("CREATE TABLE IF NOT EXISTS bench_http_accounts (id TEXT PRIMARY KEY, balance NUMERIC(19, 2))");
			jdbc.execute("INSERT INTO bench_http_accounts SELECT 'acct-' || i, 1000000 FROM generate_series(0, 99) i "
					+ "ON CONFLICT DO NOTHING");
			jdbc.execute("CREATE TABLE " + this.table + " (id UUID PRIMARY KEY, key TEXT, account TEXT, "
					+ "amount NUMERIC(19, 2), created_at TIMESTAMPTZ DEFAULT now())");
		}

		@Transactional
		Map<String, Object> pay(Map<String, Object> body) {
			String account = (String) body.get("account");
			BigDecimal balance = this.jdbc.queryForObject("SELECT balance FROM bench_http_accounts WHERE id = ?",
					BigDecimal.class, account);
			UUID id = UUID.randomUUID();
			BigDecimal amount = new BigDecimal(String.valueOf(body.get("amount")));
			this.jdbc.update("INSERT INTO " + this.table + " (id, key, account, amount) VALUES (?, ?, ?, ?)", id,
					body.get("key"), account, amount);
			this.outbox.publish("bench-http-payments", account,
					"{\"payment\":\"" + id + "\",\"account\":\"" + account + "\",\"amount\":" + amount + "}");
			return Map.of("id", id.toString(), "account", account, "amount", amount, "balance", balance);
		}

	}

	@RestController
	static class PaymentController {

		private final Payments payments;

		PaymentController(Payments payments) {
			this.payments = payments;
		}

		@PostMapping("/plain")
		ResponseEntity<Map<String, Object>> plain(@RequestBody Map<String, Object> body) {
			return ResponseEntity.status(201).body(this.payments.pay(body));
		}

		@PostMapping("/idempotent")
		@Idempotent
		ResponseEntity<Map<String, Object>> idempotent(@RequestBody Map<String, Object> body) {
			return ResponseEntity.status(201).body(this.payments.pay(body));
		}

	}

}
