package dev.idempotency.benchmarks;

import java.io.InputStream;
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

import dev.idempotency.outbox.Outbox;
import dev.idempotency.internal.outbox.OutboxRelay;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The outbox relay's throughput (events written while the relay is stopped, then relayed
 * as fast as it can), against a plain {@code KafkaProducer} with the relay's producer
 * settings sending the same events from memory to the same broker; the throughput of two
 * relay instances on one outbox, with a check of per-key order on what they published;
 * and the commit-to-acknowledgment latency at a steady 1,000 events/s (one event per
 * transaction); and, as the floor of any relay on a table, a {@link PlainRelay} over the
 * same backlog. Payloads are 1 KB over {@code BENCH_OUTBOX_KEYS} keys (1,000 by default).
 * Prints one {@code RESULT} line.
 */
public final class OutboxBenchmark {

	private OutboxBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		Properties infrastructure = new Properties();
		try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
			infrastructure.load(in);
		}
		int events = Integer.parseInt(args[1]);
		// OUTBOX_AHEAD: the same with idempotency.outbox.claim-ahead=true
		String scenario = (args.length > 2) ? args[2] : "OUTBOX";
		String run = UUID.randomUUID().toString().substring(0, 8);
		String throughputTopic = "outbox-throughput-" + run;
		String warmupTopic = "outbox-warmup-" + run;
		String latencyTopic = "outbox-latency-" + run;
		String producerTopic = "outbox-producer-" + run;
		String pairTopic = "outbox-pair-" + run;
		String plainTopic = "outbox-plain-" + run;
		String kafka = infrastructure.getProperty("kafka");
		try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka))) {
			admin.createTopics(List.of(new NewTopic(throughputTopic, 4, (short) 1), new NewTopic(warmupTopic, 4, (short) 1),
					new NewTopic(latencyTopic, 4, (short) 1), new NewTopic(producerTopic, 4, (short) 1),
					new NewTopic(pairTopic, 4, (short) 1), new NewTopic(plainTopic, 4, (short) 1)))
				.all()
				.get();
		}
		int keys = Integer.parseInt(System.getenv().getOrDefault("BENCH_OUTBOX_KEYS", "1000"));
		try (ConfigurableApplicationContext context = application(infrastructure, scenario, run);
				ConfigurableApplicationContext second = application(infrastructure, scenario, run)) {
			Outbox outbox = context.getBean(Outbox.class);
			TransactionTemplate transactions = context.getBean(TransactionTemplate.class);
			OutboxRelay relay = context.getBean(OutboxRelay.class);
			OutboxRelay secondRelay = second.getBean(OutboxRelay.class);
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			MeterRegistry secondMeters = second.getBean(MeterRegistry.class);
			secondRelay.stop();
			relay.stop();

			// Warm-up: both paths once on topics of their own, so that neither the baseline
			// nor the relay is measured while this JVM or the broker's compiles its code
			ProducerBaseline.eventsPerSecond(context.getBean(ProducerFactory.class), warmupTopic, events, keys);
			backlog(transactions, outbox, warmupTopic, events, keys);
			relay.start();
			while (published(meters, warmupTopic) < events) {
				Thread.sleep(5);
			}
			relay.stop();

			// baseline: a plain producer with the relay's settings, the same events from memory
			CpuBusy before = CpuBusy.snapshot();
			double producer = ProducerBaseline.eventsPerSecond(context.getBean(ProducerFactory.class), producerTopic,
					events, keys);
			System.err.println("PHASE producer: " + Math.round(producer) + " events/s, " + CpuBusy.snapshot().since(before));

			// throughput: a backlog written while the relay is stopped
			backlog(transactions, outbox, throughputTopic, events, keys);
			System.err.println("PHASE backlog written");
			before = CpuBusy.snapshot();
			long begin = System.nanoTime();
			relay.start();
			while (published(meters, throughputTopic) < events) {
				Thread.sleep(5);
			}
			double throughput = events / ((System.nanoTime() - begin) / 1e9);
			System.err.println("PHASE relay: " + Math.round(throughput) + " events/s, " + CpuBusy.snapshot().since(before));

			// the floor of any relay on this table: a plain loop that reads, sends and deletes
			relay.stop();
			backlog(transactions, outbox, plainTopic, events, keys);
			before = CpuBusy.snapshot();
			double plain = PlainRelay.eventsPerSecond(context.getBean(DataSource.class),
					context.getBean(ProducerFactory.class), "outbox_" + run, plainTopic, events);
			System.err.println("PHASE plain relay: " + Math.round(plain) + " events/s, " + CpuBusy.snapshot().since(before));

			// two relay instances on one outbox
			backlog(transactions, outbox, pairTopic, events, keys);
			before = CpuBusy.snapshot();
			begin = System.nanoTime();
			relay.start();
			secondRelay.start();
			while (published(meters, pairTopic) + published(secondMeters, pairTopic) < events) {
				Thread.sleep(5);
			}
			double pair = events / ((System.nanoTime() - begin) / 1e9);
			System.err.println("PHASE two relays: " + Math.round(pair) + " events/s, " + CpuBusy.snapshot().since(before));
			secondRelay.stop();
			long violations = ProducerBaseline.orderViolations(kafka, pairTopic, events);

			// latency: one event per transaction at 1,000 events/s; 5 s of warm-up, 10 s measured
			steady(transactions, outbox, warmupTopic, 5);
			long measured = steady(transactions, outbox, latencyTopic, 10);
			while (published(meters, latencyTopic) < measured) {
				Thread.sleep(5);
			}
			Timer latency = meters.get("idempotency.outbox.latency").tag("topic", latencyTopic).timer();
			double[] percentiles = Percentiles.p50p99(latency, TimeUnit.MILLISECONDS);
			double p50 = percentiles[0];
			double p99 = percentiles[1];
			System.out.println(String.format("RESULT scenario=" + scenario + " events=%d keys=%d throughput=%.0f producer=%.0f "
					+ "plainRelay=%.0f twoRelays=%.0f orderViolations=%d steadyEvents=%d latencyP50ms=%.1f latencyP99ms=%.1f",
					events, keys, throughput, producer, plain, pair, violations, measured, p50, p99));
		}
	}

	/**
	 * An application on an outbox table of this run's own (shared by the run's two
	 * instances), so that no round relays over the dead rows of the rounds before it.
	 */
	private static ConfigurableApplicationContext application(Properties infrastructure, String scenario,
			String run) {
		return new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE)
			.properties("spring.main.banner-mode=off", "logging.level.root=WARN",
					"spring.datasource.url=" + infrastructure.getProperty("jdbc"), "spring.datasource.username=postgres",
					"spring.datasource.password=postgres",
					"spring.kafka.bootstrap-servers=" + infrastructure.getProperty("kafka"),
					"spring.datasource.hikari.maximum-pool-size=4")
			.properties(BenchmarkScenario.extraProperties())
			.properties("idempotency.outbox.claim-ahead=" + "OUTBOX_AHEAD".equals(scenario),
					"idempotency.outbox.table=outbox_" + run, "idempotency.flyway.table=schema_history_" + run)
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

	private static long steady(TransactionTemplate transactions, Outbox outbox, String topic, int seconds) throws InterruptedException {
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

	private static double published(MeterRegistry meters, String topic) {
		Counter counter = meters.find("idempotency.outbox.published").tag("topic", topic).counter();
		return (counter != null) ? counter.count() : 0;
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		MeterFilter latencyPercentiles() {
			return Percentiles.of("idempotency.outbox.latency");
		}

	}

}
