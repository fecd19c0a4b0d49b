package dev.idempotency.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;

/**
 * Runs one scenario in this JVM and prints one {@code RESULT} line: starts the
 * application (listener stopped), prepares the keys for an all-duplicates scenario,
 * produces the messages, starts the listener and waits until all are consumed.
 */
public final class BenchmarkScenario {

	private static final String KEY_HEADER = "X-Idempotency-Key";

	private BenchmarkScenario() {
	}

	public static void main(String[] args) throws Exception {
		Scenario scenario = Scenario.valueOf(args[0]);
		Properties infrastructure = load(Path.of(args[1]));
		int messages = Integer.parseInt(args[2]);
		String run = scenario.name().toLowerCase().replace('_', '-') + "-" + UUID.randomUUID().toString().substring(0, 8);
		String topic = "bench-" + run;
		String group = "bench-" + run;
		int partitions = scenario.growingTable ? 3 : 1;
		createTopic(infrastructure.getProperty("kafka"), topic, partitions);
		try (ConfigurableApplicationContext context = new SpringApplicationBuilder(App.class)
			.web(WebApplicationType.NONE)
			.properties("spring.main.banner-mode=off", "logging.level.root=WARN",
					"spring.datasource.url=" + infrastructure.getProperty("jdbc"), "spring.datasource.username=postgres",
					"spring.datasource.password=postgres",
					"spring.kafka.bootstrap-servers=" + infrastructure.getProperty("kafka"),
					"spring.kafka.consumer.auto-offset-reset=earliest", "spring.data.redis.url=" + infrastructure.getProperty("redis"),
					"idempotency.cache.enabled=" + scenario.cache, "idempotency.outbox.relay-enabled=false", "bench.topic=" + topic, "bench.group=" + group,
					"bench.listener=" + scenario.listener.name(), "bench.messages=" + messages)
			.properties(extraProperties())
			.run()) {
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			List<String> keys = new ArrayList<>(messages);
			for (int i = 0; i < messages; i++) {
				keys.add(scenario.growingTable ? UUID.randomUUID().toString() : run + "-" + i);
			}
			if (scenario.growingTable) {
				// As after a deployment on an emptied table: statistics gathered while it held
				// another group's rows only (a truncation keeps them), none of the rows to come.
				jdbc.execute("TRUNCATE processed_messages");
				jdbc.execute("INSERT INTO processed_messages (consumer_group, idempotency_key) "
						+ "SELECT 'earlier-group', 'k-' || i FROM generate_series(1, 1000) AS i ON CONFLICT DO NOTHING");
				jdbc.execute("ANALYZE processed_messages");
				jdbc.execute("TRUNCATE processed_messages");
				// autovacuum refreshes them within its first minute on this idle server; on a
				// busy one it may reach the table late: BENCH_STALE_STATISTICS=true switches it
				// off on the table, so that they stay stale for the whole run
				jdbc.execute("ALTER TABLE processed_messages SET (autovacuum_enabled = "
						+ !Boolean.parseBoolean(System.getenv("BENCH_STALE_STATISTICS")) + ")");
			}
			if (scenario.duplicates) {
				markProcessed(jdbc, context.getBean(StringRedisTemplate.class), group, keys, scenario.cache);
			}
			produce(infrastructure.getProperty("kafka"), topic, partitions, keys);
			Progress progress = context.getBean(Progress.class);
			context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("bench").start();
			if (!progress.await(600)) {
				throw new IllegalStateException("Scenario " + scenario + " consumed only " + progress.done() + " of "
						+ messages + " messages in 10 minutes");
			}
			Integer effects = scenario.growingTable
					? jdbc.queryForObject("SELECT count(*) FROM bench_effects WHERE message_key = ANY(?)", Integer.class,
							(Object) keys.toArray(String[]::new))
					: jdbc.queryForObject("SELECT count(*) FROM bench_effects WHERE message_key LIKE ?", Integer.class,
							run + "-%");
			int expectedEffects = scenario.writes() ? messages : 0;
			if (effects == null || effects != expectedEffects) {
				throw new IllegalStateException("Scenario " + scenario + " wrote " + effects + " business rows, expected "
						+ expectedEffects);
			}
			if (scenario.listener == Scenario.Listener.BATCH_FLOOR) {
				Integer claimed = jdbc.queryForObject("SELECT count(*) FROM bench_claims_floor WHERE consumer_group = ?",
						Integer.class, group);
				if (claimed == null || claimed != messages) {
					throw new IllegalStateException("Scenario " + scenario + " inserted " + claimed + " keys, expected "
							+ messages);
				}
			}
			System.out.println(result(scenario, messages, progress, context.getBean(MeterRegistry.class)));
		}
	}

	// BENCH_PROPERTIES="name=value name=value" tries a setting without editing the harness
	static String[] extraProperties() {
		String extra = System.getenv("BENCH_PROPERTIES");
		return (extra == null || extra.isBlank()) ? new String[0] : extra.trim().split("\\s+");
	}

	private static String result(Scenario scenario, int messages, Progress progress, MeterRegistry registry) {
		StringBuilder line = new StringBuilder("RESULT scenario=").append(scenario.name())
			.append(" messages=")
			.append(messages)
			.append(String.format(" rate=%.0f first=%.0f steady=%.0f", progress.rate(), progress.firstHalfRate(),
					progress.steadyRate()));
		Timer claim = registry.find("idempotency.claim").timer();
		if (claim != null && claim.count() > 0) {
			double perClaim = (double) messages / claim.count();
			double[] percentiles = Percentiles.p50p99(claim, TimeUnit.MICROSECONDS);
			double p50 = percentiles[0];
			double p99 = percentiles[1];
			// a batch is claimed in one statement: spread its time over its records
			line.append(String.format(" claims=%d recordsPerClaim=%.1f claimP50us=%.1f claimP99us=%.1f", claim.count(),
					perClaim, p50 / perClaim, p99 / perClaim));
		}
		return line.toString();
	}

	private static void markProcessed(JdbcTemplate jdbc, StringRedisTemplate redis, String group, List<String> keys,
			boolean cache) {
		jdbc.batchUpdate("INSERT INTO processed_messages (consumer_group, idempotency_key) VALUES (?, ?)",
				keys.stream().map((key) -> new Object[] { group, key }).toList());
		if (cache) {
			// the layout the cache documents: <prefix><scope length>:<scope>:<key>
			String prefix = "idempotency:cache:" + group.length() + ":" + group + ":";
			byte[] value = "1".getBytes(StandardCharsets.UTF_8);
			redis.executePipelined((RedisCallback<Object>) (connection) -> {
				keys.forEach((key) -> connection.stringCommands()
					.set((prefix + key).getBytes(StandardCharsets.UTF_8), value));
				return null;
			});
		}
	}

	private static void produce(String bootstrap, String topic, int partitions, List<String> keys) {
		Properties properties = new Properties();
		properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
		properties.put(ProducerConfig.LINGER_MS_CONFIG, 10);
		properties.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
		String filler = "x".repeat(160);
		try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties, new StringSerializer(),
				new StringSerializer())) {
			for (int i = 0; i < keys.size(); i++) {
				String key = keys.get(i);
				ProducerRecord<String, String> record = new ProducerRecord<>(topic, i % partitions, null,
						"{\"payment\":\"" + key + "\",\"filler\":\"" + filler + "\"}");
				record.headers().add(KEY_HEADER, key.getBytes(StandardCharsets.UTF_8));
				producer.send(record);
			}
			producer.flush();
		}
	}

	private static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
		Properties properties = new Properties();
		properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
		try (Admin admin = Admin.create(properties)) {
			admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
		}
	}

	private static Properties load(Path path) throws IOException {
		Properties properties = new Properties();
		try (InputStream in = Files.newInputStream(path)) {
			properties.load(in);
		}
		return properties;
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Progress progress(org.springframework.core.env.Environment environment) {
			return new Progress(environment.getRequiredProperty("bench.messages", Long.class));
		}

		@Bean
		MeterFilter claimPercentiles() {
			return Percentiles.of("idempotency.claim");
		}

		@Bean
		BusinessTable businessTable(JdbcTemplate jdbc) {
			jdbc.execute("CREATE TABLE IF NOT EXISTS bench_effects (id BIGSERIAL PRIMARY KEY, message_key TEXT NOT NULL, "
					+ "payload TEXT NOT NULL)");
			return new BusinessTable();
		}

		@Bean
		@ConditionalOnProperty(name = "bench.listener", havingValue = "RECORD_PLAIN")
		BenchmarkListeners.RecordPlain recordPlain(JdbcTemplate jdbc, BusinessTable table) {
			return new BenchmarkListeners.RecordPlain(jdbc);
		}

		@Bean
		@ConditionalOnProperty(name = "bench.listener", havingValue = "RECORD_NOOP")
		BenchmarkListeners.RecordNoop recordNoop() {
			return new BenchmarkListeners.RecordNoop();
		}

		@Bean
		@ConditionalOnProperty(name = "bench.listener", havingValue = "RECORD_IDEMPOTENT")
		BenchmarkListeners.RecordIdempotent recordIdempotent(JdbcTemplate jdbc, BusinessTable table) {
			return new BenchmarkListeners.RecordIdempotent(jdbc);
		}

		@Bean
		@ConditionalOnProperty(name = "bench.listener", havingValue = "RECORD_LEASE")
		BenchmarkListeners.RecordLease recordLease(JdbcTemplate jdbc, BusinessTable table) {
			return new BenchmarkListeners.RecordLease(jdbc);
		}

		@Bean
		@ConditionalOnProperty(name = "bench.listener", havingValue = "BATCH_PLAIN")
		BenchmarkListeners.BatchPlain batchPlain(JdbcTemplate jdbc, BusinessTable table) {
			return new BenchmarkListeners.BatchPlain(jdbc);
		}

		@Bean
		@ConditionalOnProperty(name = "bench.listener", havingValue = "BATCH_FLOOR")
		BenchmarkListeners.BatchFloor batchFloor(JdbcTemplate jdbc, BusinessTable table,
				org.springframework.core.env.Environment environment) {
			jdbc.execute(BenchmarkListeners.BatchFloor.TABLE);
			return new BenchmarkListeners.BatchFloor(jdbc, environment.getRequiredProperty("bench.group"));
		}

		@Bean
		@ConditionalOnProperty(name = "bench.listener", havingValue = "BATCH_IDEMPOTENT")
		BenchmarkListeners.BatchIdempotent batchIdempotent(JdbcTemplate jdbc, BusinessTable table) {
			return new BenchmarkListeners.BatchIdempotent(jdbc);
		}

	}

	static final class BusinessTable {

	}


}
