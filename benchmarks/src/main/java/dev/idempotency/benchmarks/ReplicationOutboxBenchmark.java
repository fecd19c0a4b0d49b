package dev.idempotency.benchmarks;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import dev.idempotency.internal.outbox.OutboxRelay;
import dev.idempotency.internal.outbox.OutboxReplicationRelay;
import dev.idempotency.outbox.Outbox;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The replication relay (scenario {@code OUTBOX_REPLICATION}) in one JVM with what it is
 * measured against: a plain {@code KafkaProducer} with the relay's settings sending the
 * same events from memory, the table relay and the plainest loop that relays from a table
 * ({@link PlainRelay}), each over a backlog of the same events; then the replication
 * relay's commit-to-acknowledgment latency at a steady 1,000 events/s (one event per
 * transaction). The replication relay's backlog is written while its slot exists and the
 * relay is stopped, so that it is read from the stream. Payloads are 1 KB over
 * {@code BENCH_OUTBOX_KEYS} keys (1,000 by default). Prints one {@code RESULT} line.
 */
public final class ReplicationOutboxBenchmark {

	private ReplicationOutboxBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		Properties infrastructure = new Properties();
		try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
			infrastructure.load(in);
		}
		int events = Integer.parseInt(args[1]);
		String run = UUID.randomUUID().toString().substring(0, 8);
		String warmupTopic = "replication-warmup-" + run;
		String producerTopic = "replication-producer-" + run;
		String tableTopic = "replication-table-" + run;
		String plainTopic = "replication-plain-" + run;
		String streamTopic = "replication-stream-" + run;
		String latencyTopic = "replication-latency-" + run;
		String kafka = infrastructure.getProperty("kafka");
		try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka))) {
			admin.createTopics(List.of(new NewTopic(warmupTopic, 4, (short) 1), new NewTopic(producerTopic, 4, (short) 1),
					new NewTopic(tableTopic, 4, (short) 1), new NewTopic(plainTopic, 4, (short) 1),
					new NewTopic(streamTopic, 4, (short) 1), new NewTopic(latencyTopic, 4, (short) 1)))
				.all()
				.get();
		}
		int keys = Integer.parseInt(System.getenv().getOrDefault("BENCH_OUTBOX_KEYS", "1000"));
		try (ConfigurableApplicationContext tables = application(infrastructure, "outbox_" + run, false);
				ConfigurableApplicationContext stream = application(infrastructure, "routbox_" + run, true)) {
			OutboxRelay tableRelay = tables.getBean(OutboxRelay.class);
			OutboxReplicationRelay replicationRelay = stream.getBean(OutboxReplicationRelay.class);
			while (!replicationRelay.isActive()) {
				Thread.sleep(5);
			}
			tableRelay.stop();
			Outbox tableOutbox = tables.getBean(Outbox.class);
			TransactionTemplate tableTransactions = tables.getBean(TransactionTemplate.class);
			Outbox streamOutbox = stream.getBean(Outbox.class);
			TransactionTemplate streamTransactions = stream.getBean(TransactionTemplate.class);
			MeterRegistry tableMeters = tables.getBean(MeterRegistry.class);
			MeterRegistry streamMeters = stream.getBean(MeterRegistry.class);
			ProducerFactory<?, ?> producers = tables.getBean(ProducerFactory.class);

			// warm-up: the producer and both relays once, on a topic of their own
			ProducerBaseline.eventsPerSecond(producers, warmupTopic, events, keys);
			backlog(streamTransactions, streamOutbox, warmupTopic, events, keys);
			awaitPublished(streamMeters, warmupTopic, events);
			backlog(tableTransactions, tableOutbox, warmupTopic, events, keys);
			tableRelay.start();
			awaitPublished(tableMeters, warmupTopic, events);
			tableRelay.stop();

			CpuBusy before = CpuBusy.snapshot();
			double producer = ProducerBaseline.eventsPerSecond(producers, producerTopic, events, keys);
			System.err.println("PHASE producer: " + Math.round(producer) + " events/s, " + CpuBusy.snapshot().since(before));

			backlog(tableTransactions, tableOutbox, tableTopic, events, keys);
			before = CpuBusy.snapshot();
			long begin = System.nanoTime();
			tableRelay.start();
			awaitPublished(tableMeters, tableTopic, events);
			double table = events / ((System.nanoTime() - begin) / 1e9);
			tableRelay.stop();
			System.err.println("PHASE table relay: " + Math.round(table) + " events/s, " + CpuBusy.snapshot().since(before));

			backlog(tableTransactions, tableOutbox, plainTopic, events, keys);
			before = CpuBusy.snapshot();
			double plain = PlainRelay.eventsPerSecond(tables.getBean(DataSource.class), producers, "outbox_" + run,
					plainTopic, events);
			System.err.println("PHASE plain relay: " + Math.round(plain) + " events/s, " + CpuBusy.snapshot().since(before));

			// the replication relay over a backlog in the WAL: written while it is stopped;
			// the write side: Outbox.publish per event, against a plain insert of the same
			// rows into a table like the outbox, in transactions of the same size
			replicationRelay.stop();
			long writeBegin = System.nanoTime();
			backlog(streamTransactions, streamOutbox, streamTopic, events, keys);
			double publishMicros = (System.nanoTime() - writeBegin) / 1e3 / events;
			double insertMicros = plainInserts(streamTransactions, new JdbcTemplate(stream.getBean(DataSource.class)),
					"routbox_" + run, streamTopic, events, keys);
			System.err.println("PHASE write side: Outbox.publish " + String.format("%.1f", publishMicros)
					+ " us/event, plain insert " + String.format("%.1f", insertMicros) + " us/event");
			before = CpuBusy.snapshot();
			begin = System.nanoTime();
			replicationRelay.start();
			awaitPublished(streamMeters, streamTopic, events);
			double replication = events / ((System.nanoTime() - begin) / 1e9);
			System.err.println("PHASE replication relay: " + Math.round(replication) + " events/s, "
					+ CpuBusy.snapshot().since(before));
			long violations = ProducerBaseline.orderViolations(kafka, streamTopic, events);

			// latency: one event per transaction at 1,000 events/s; 5 s of warm-up, 10 s measured
			steady(streamTransactions, streamOutbox, warmupTopic, 5);
			long measured = steady(streamTransactions, streamOutbox, latencyTopic, 10);
			awaitPublished(streamMeters, latencyTopic, measured);
			Timer latency = streamMeters.get("idempotency.outbox.latency").tag("topic", latencyTopic).timer();
			double[] percentiles = Percentiles.p50p99(latency, TimeUnit.MILLISECONDS);
			replicationRelay.stop();
			new JdbcTemplate(stream.getBean(DataSource.class)).queryForList(
					"SELECT pg_drop_replication_slot(?)", Object.class, "routbox_" + run + "_slot");
			System.out.println(String.format("RESULT scenario=OUTBOX_REPLICATION events=%d keys=%d throughput=%.0f "
					+ "producer=%.0f tableRelay=%.0f plainRelay=%.0f orderViolations=%d steadyEvents=%d "
					+ "latencyP50ms=%.1f latencyP99ms=%.1f publishUs=%.1f insertUs=%.1f", events, keys, replication,
					producer, table, plain, violations, measured, percentiles[0], percentiles[1], publishMicros,
					insertMicros));
		}
	}

	private static ConfigurableApplicationContext application(Properties infrastructure, String table,
			boolean replication) {
		return new SpringApplicationBuilder(OutboxBenchmark.App.class).web(WebApplicationType.NONE)
			.properties("spring.main.banner-mode=off", "logging.level.root=WARN",
					"spring.datasource.url=" + infrastructure.getProperty("jdbc"), "spring.datasource.username=postgres",
					"spring.datasource.password=postgres",
					"spring.kafka.bootstrap-servers=" + infrastructure.getProperty("kafka"),
					"spring.datasource.hikari.maximum-pool-size=4")
			.properties(BenchmarkScenario.extraProperties())
			.properties("idempotency.outbox.table=" + table, "idempotency.flyway.table=schema_history_" + table,
					"idempotency.outbox.replication.enabled=" + replication)
			// The embedded server commits asynchronously (synchronous_commit = off), and a
			// walsender sends only flushed WAL: each commit would reach the stream after the
			// WAL writer's next flush (wal_writer_delay, 200 ms). PostgreSQL's default, on,
			// for the replication relay's writers, as a production server has it.
			.properties(replication ? new String[] { "spring.datasource.hikari.connection-init-sql=SET synchronous_commit = on" }
					: new String[0])
			.run();
	}

	private static void backlog(TransactionTemplate transactions, Outbox outbox, String topic, int events, int keys) {
		for (int written = 0; written < events; written += 1000) {
			int start = written;
			transactions.executeWithoutResult((status) -> {
				for (int i = start; i < Math.min(start + 1000, events); i++) {
					outbox.publish(topic, "key-" + (i % keys), ProducerBaseline.payload(i));
				}
			});
		}
	}

	// the same rows as backlog(...) writes, inserted by a plain statement per event into a
	// table like the outbox (its columns, defaults and indexes; in no publication, which
	// changes nothing of what is written to the WAL); returns microseconds per event
	private static double plainInserts(TransactionTemplate transactions, JdbcTemplate jdbc, String outboxTable,
			String topic, int events, int keys) {
		String table = outboxTable + "_plain";
		jdbc.execute("CREATE TABLE " + table + " (LIKE " + outboxTable + " INCLUDING ALL)");
		String insert = "INSERT INTO " + table + " (event_id, aggregate_id, topic, payload) VALUES (?, ?, ?, ?)";
		long begin = System.nanoTime();
		for (int written = 0; written < events; written += 1000) {
			int start = written;
			transactions.executeWithoutResult((status) -> {
				for (int i = start; i < Math.min(start + 1000, events); i++) {
					jdbc.update(insert, UUID.randomUUID(), "key-" + (i % keys), topic,
							ProducerBaseline.payload(i).getBytes(StandardCharsets.UTF_8));
				}
			});
		}
		double micros = (System.nanoTime() - begin) / 1e3 / events;
		jdbc.execute("DROP TABLE " + table);
		return micros;
	}

	private static long steady(TransactionTemplate transactions, Outbox outbox, String topic, int seconds)
			throws InterruptedException {
		AtomicLong written = new AtomicLong();
		ScheduledExecutorService writer = Executors.newSingleThreadScheduledExecutor();
		writer.scheduleAtFixedRate(() -> transactions.executeWithoutResult((status) -> {
			outbox.publish(topic, "key-" + (written.get() % 100), ProducerBaseline.payload((int) written.get()));
			written.incrementAndGet();
		}), 0, 1, TimeUnit.MILLISECONDS);
		Thread.sleep(seconds * 1000L);
		writer.shutdown();
		writer.awaitTermination(10, TimeUnit.SECONDS);
		return written.get();
	}

	private static void awaitPublished(MeterRegistry meters, String topic, double events) throws InterruptedException {
		while (published(meters, topic) < events) {
			Thread.sleep(5);
		}
	}

	private static double published(MeterRegistry meters, String topic) {
		Counter counter = meters.find("idempotency.outbox.published").tag("topic", topic).counter();
		return (counter != null) ? counter.count() : 0;
	}

}
