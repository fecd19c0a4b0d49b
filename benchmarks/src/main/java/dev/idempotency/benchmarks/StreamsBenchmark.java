package dev.idempotency.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.idempotency.streams.Deduplication;
import dev.idempotency.streams.DeduplicationRocksDBConfigSetter;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;

/**
 * Runs one Kafka Streams scenario in this JVM and prints one {@code RESULT} line. The
 * input topic (one partition) holds 2 × N records of about 100 B with an
 * {@code X-Idempotency-Key} header, produced before the application starts: N records
 * with new keys (the warm-up: JIT, and N keys in the store), then the measured N, with
 * new keys or with the keys of the first N again. A counting processor at the head of
 * the topology notes the time of the first, the (N+1)th and the last record; the same
 * processor is in every scenario.
 */
public final class StreamsBenchmark {

	private StreamsBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		StreamsScenario scenario = StreamsScenario.valueOf(args[0]);
		Properties infrastructure = new Properties();
		try (InputStream in = Files.newInputStream(Path.of(args[1]))) {
			infrastructure.load(in);
		}
		int measured = Integer.parseInt(args[2]);
		String kafka = infrastructure.getProperty("kafka");
		String run = scenario.name().toLowerCase().replace('_', '-') + "-" + UUID.randomUUID().toString().substring(0, 8);
		String input = "streams-bench-" + run + "-in";
		String output = "streams-bench-" + run + "-out";
		String copies = "streams-bench-" + run + "-copies";
		createTopics(kafka, input, output, copies);
		produce(kafka, input, run, measured, scenario.duplicates, scenario.expiring);

		Timing clock = new Timing(measured);
		StreamsBuilder builder = new StreamsBuilder();
		KStream<String, String> records = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
			.processValues(() -> new Clock(clock));
		String store = null;
		if (scenario.windowStore) {
			records = records.processValues(new WindowStoreDeduplication(WINDOW));
			store = WindowStoreDeduplication.STORE;
		}
		else if (scenario.deduplicate) {
			// the purge on, every 5 s (the default is a minute, longer than a scenario):
			// each purge reads the whole store, in slices (no key expires within the hour);
			// -Dbench.purgeIntervalMs sets another interval, for the _EXPIRE scenarios,
			// whose measured half may otherwise end before a purge has found expired keys
			Deduplication.Builder<String, String> deduplication = Deduplication.<String, String>builder("bench")
				.window(WINDOW)
				.purgeInterval(Duration.ofMillis(Long.getLong("bench.purgeIntervalMs", 5000)));
			if (scenario.bloomPreCheck) {
				deduplication.bloomPreCheck(4L * measured, 0.01);
			}
			if (scenario == StreamsScenario.S_NEW_LOOKUP || scenario == StreamsScenario.S_DUP_LOOKUP) {
				deduplication.withoutBloomPreCheck();
			}
			if (scenario == StreamsScenario.S_NEW_MEMORY) {
				deduplication.inMemory();
			}
			Deduplication<String, String> built = deduplication.build();
			records = records.processValues(built);
			store = built.storeName();
		}
		records.to(output, Produced.with(Serdes.String(), Serdes.String()));
		if (scenario == StreamsScenario.S_PASS_TWICE) {
			// one more record produced per input record, as a changelogged store writes one
			// per new key: the floor of any such store's cost
			records.to(copies, Produced.with(Serdes.String(), Serdes.String()));
		}

		Path stateDir = Files.createTempDirectory("streams-bench-");
		Properties properties = new Properties();
		properties.put(StreamsConfig.APPLICATION_ID_CONFIG, "streams-bench-" + run);
		properties.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka);
		properties.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
		// -Dbench.rocksdb=kafka-defaults measures Kafka Streams' own RocksDB settings instead
		if (!"kafka-defaults".equals(System.getProperty("bench.rocksdb"))) {
			properties.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, DeduplicationRocksDBConfigSetter.class);
		}
		properties.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
		for (String extra : BenchmarkScenario.extraProperties()) {
			String[] pair = extra.split("=", 2);
			properties.put(pair[0], pair[1]);
		}
		try (KafkaStreams streams = new KafkaStreams(builder.build(), properties)) {
			streams.start();
			if (!clock.finished.await(600, TimeUnit.SECONDS)) {
				throw new IllegalStateException("Scenario " + scenario + " saw only part of its records in 10 minutes");
			}
		}
		StateSize size = (store != null) ? StateSize.of(kafka, stateDir, "streams-bench-" + run, store)
				: StateSize.NONE;
		System.err.println("THREADS scenario=" + scenario.name() + " "
				+ ThreadCpu.perRecord(clock.halfThreads, clock.lastThreads, measured - 1));
		StallSampler stalls = clock.stalls;
		if (stalls != null) {
			stalls.stop(3).forEach((stall) -> System.err.println("STALL scenario=" + scenario.name() + " " + stall));
		}
		// CPU time of the stream thread over the measured half: what the processor costs,
		// independent of how long other processes on the machine held the CPU
		System.out.println(String.format(
				"RESULT scenario=%s records=%d rate=%.0f steady=%.0f cpuUsPerRecord=%.2f maxGapMs=%.1f keys=%d"
						+ " sstBytes=%d stateBytes=%d changelogBytes=%d changelogRecords=%d",
				scenario.name(), measured, 2.0 * measured / seconds(clock.first, clock.last),
				(measured - 1) / seconds(clock.half, clock.last),
				(clock.lastCpu - clock.halfCpu) / 1e3 / (measured - 1), clock.maxGapNanos / 1e6,
				scenario.duplicates ? measured : 2L * measured, size.sstBytes(), size.stateBytes(),
				size.changelogBytes(), size.changelogRecords()));
	}

	// the module's default window, and the baseline's
	static final Duration WINDOW = Duration.ofHours(1);

	private static double seconds(long from, long to) {
		return (to - from) / 1e9;
	}

	private static void createTopics(String kafka, String... topics) throws Exception {
		Properties properties = new Properties();
		properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka);
		try (Admin admin = Admin.create(properties)) {
			admin.createTopics(List.of(topics).stream().map((name) -> new NewTopic(name, 1, (short) 1)).toList())
				.all()
				.get();
		}
	}

	/**
	 * Produce the input. With {@code expiring}, the records' timestamps are spread evenly
	 * over 5/3 of the window, starting two hours ago: the measured half runs from 5/6 of
	 * the window to 5/3 of it, so that the keys of the first records expire once the stream
	 * time passes the window plus the grace period.
	 */
	private static void produce(String kafka, String topic, String run, int measured, boolean duplicates,
			boolean expiring) throws IOException {
		long start = System.currentTimeMillis() - Duration.ofHours(2).toMillis();
		double step = WINDOW.toMillis() * 5.0 / 3 / (2.0 * measured);
		Properties properties = new Properties();
		properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka);
		properties.put(ProducerConfig.LINGER_MS_CONFIG, 20);
		properties.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
		String payload = "x".repeat(100);
		try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties, new StringSerializer(),
				new StringSerializer())) {
			for (int i = 0; i < 2 * measured; i++) {
				int key = (duplicates && i >= measured) ? i - measured : i;
				String id = run + "-" + key;
				ProducerRecord<String, String> record = new ProducerRecord<>(topic, null,
						expiring ? start + (long) (i * step) : null, id, payload);
				record.headers().add("X-Idempotency-Key", id.getBytes(StandardCharsets.UTF_8));
				producer.send(record);
			}
			producer.flush();
		}
	}

	/**
	 * When the first record, the first measured one and the last one were seen.
	 */
	static final class Timing {

		private final long measured;

		private final CountDownLatch finished = new CountDownLatch(1);

		private volatile long first;

		private volatile long half;

		private volatile long last;

		private volatile long halfCpu;

		private volatile long lastCpu;

		// the longest wait between two records of the measured half: a stall of the stream thread
		private volatile long maxGapNanos;

		private volatile Map<String, Long> halfThreads = Map.of();

		private volatile Map<String, Long> lastThreads = Map.of();

		private volatile StallSampler stalls;

		Timing(long measured) {
			this.measured = measured;
		}

	}

	/**
	 * Notes the times in its {@link Timing} and forwards every record unchanged (the
	 * input has one partition, so there is one instance).
	 */
	static final class Clock implements FixedKeyProcessor<String, String, String> {

		private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

		private final Timing timing;

		private FixedKeyProcessorContext<String, String> context;

		private long seen;

		private long previous;

		// when the last record of the measured half was seen, for the stall sampler
		private volatile long lastMeasured;

		Clock(Timing timing) {
			this.timing = timing;
		}

		@Override
		public void init(FixedKeyProcessorContext<String, String> context) {
			this.context = context;
			// -Dbench.stalls=true: what the stream thread does while it passes no record on
			if (Boolean.getBoolean("bench.stalls")) {
				// until the last record: closing the application is no stall
				this.timing.stalls = StallSampler.start(Thread.currentThread(),
						() -> (this.timing.finished.getCount() == 0) ? 0 : this.lastMeasured);
			}
		}

		@Override
		public void process(FixedKeyRecord<String, String> record) {
			this.seen++;
			long now = System.nanoTime();
			if (this.seen > this.timing.measured + 1 && now - this.previous > this.timing.maxGapNanos) {
				this.timing.maxGapNanos = now - this.previous;
			}
			this.previous = now;
			if (this.timing.stalls != null && this.seen > this.timing.measured) {
				this.lastMeasured = now;
			}
			if (this.seen == 1) {
				this.timing.first = now;
			}
			else if (this.seen == this.timing.measured + 1) {
				this.timing.half = now;
				this.timing.halfCpu = THREADS.getCurrentThreadCpuTime();
				this.timing.halfThreads = ThreadCpu.snapshot();
			}
			this.context.forward(record);
			if (this.seen == 2 * this.timing.measured) {
				this.timing.lastCpu = THREADS.getCurrentThreadCpuTime();
				this.timing.lastThreads = ThreadCpu.snapshot();
				this.timing.last = System.nanoTime();
				this.timing.finished.countDown();
			}
		}

	}

	enum StreamsScenario {

		S_PASS("pass-through topology (baseline)", false, false, false),

		S_PASS_TWICE("pass-through topology that also sends each record to a second topic", false, false, false),

		S_NEW("deduplicating processor, all new", true, false, false),

		S_DUP("deduplicating processor, all duplicates", true, true, false),

		S_NEW_BLOOM("deduplicating processor, the Bloom pre-check sized for 4 N keys, all new", true, false, true),

		S_DUP_BLOOM("deduplicating processor, the Bloom pre-check sized for 4 N keys, all duplicates", true, true,
				true),

		S_NEW_LOOKUP("deduplicating processor without the Bloom pre-check, all new", true, false, false),

		S_DUP_LOOKUP("deduplicating processor without the Bloom pre-check, all duplicates", true, true, false),

		S_NEW_MEMORY("deduplicating processor, in-memory store (changelog kept), all new", true, false, false),

		S_NEW_WINDOW("the usual window-store deduplication (fetch, then put), all new", true, false, false, true),

		S_DUP_WINDOW("the usual window-store deduplication (fetch, then put), all duplicates", true, true, false,
				true),

		S_NEW_EXPIRE("deduplicating processor, all new, keys expiring in the measured half", true, false, false,
				false, true),

		S_NEW_WINDOW_EXPIRE("the usual window-store deduplication, all new, keys expiring in the measured half",
				true, false, false, true, true);

		final String description;

		final boolean deduplicate;

		final boolean duplicates;

		final boolean bloomPreCheck;

		final boolean windowStore;

		final boolean expiring;

		StreamsScenario(String description, boolean deduplicate, boolean duplicates, boolean bloomPreCheck) {
			this(description, deduplicate, duplicates, bloomPreCheck, false);
		}

		StreamsScenario(String description, boolean deduplicate, boolean duplicates, boolean bloomPreCheck,
				boolean windowStore) {
			this(description, deduplicate, duplicates, bloomPreCheck, windowStore, false);
		}

		StreamsScenario(String description, boolean deduplicate, boolean duplicates, boolean bloomPreCheck,
				boolean windowStore, boolean expiring) {
			this.description = description;
			this.deduplicate = deduplicate;
			this.duplicates = duplicates;
			this.bloomPreCheck = bloomPreCheck;
			this.windowStore = windowStore;
			this.expiring = expiring;
		}

	}

}
