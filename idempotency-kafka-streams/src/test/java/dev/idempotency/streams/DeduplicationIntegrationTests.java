package dev.idempotency.streams;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.IntStream;

import dev.idempotency.streams.test.TestBroker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The deduplicating processor in real Kafka Streams applications on a real broker:
 * restored from its changelog after a restart, handed over in a rebalance, and atomic with
 * its output under exactly-once processing.
 */
class DeduplicationIntegrationTests {

	@TempDir
	Path stateDirs;

	private final List<KafkaStreams> running = new ArrayList<>();

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	@AfterEach
	void closeAll() {
		this.running.forEach((streams) -> streams.close(Duration.ofSeconds(10)));
	}

	@Test
	void dropsCopiesOfRecordsSeenBeforeARestartOnAnEmptyStateDirectoryFromTheChangelog() throws Exception {
		List<String> topics = TestBroker.createTopics("restart", 1, "in", "out");
		String applicationId = "restart-" + UUID.randomUUID();
		KafkaStreams first = start(applicationId, "first", topics, (builder) -> builder.bloomPreCheck(1000, 0.01),
				null);
		assertThat(DeduplicationRocksDBConfigSetter.sharedCacheUsers()).isPositive();
		for (String key : List.of("a", "b", "c")) {
			TestBroker.send(topics.get(0), key, key + "1");
		}
		assertThat(TestBroker.readCommitted(topics.get(1), 3, Duration.ofSeconds(30))).containsExactly("a1", "b1",
				"c1");
		first.close(Duration.ofSeconds(10));

		Path emptyStateDir = this.stateDirs.resolve("second");
		assertThat(emptyStateDir).doesNotExist();
		start(applicationId, "second", topics, (builder) -> builder.bloomPreCheck(1000, 0.01), null);
		TestBroker.send(topics.get(0), "a", "a2");
		TestBroker.send(topics.get(0), "d", "d1");
		TestBroker.send(topics.get(0), "b", "b2");
		assertThat(TestBroker.readCommitted(topics.get(1), 4, Duration.ofSeconds(30))).containsExactly("a1", "b1",
				"c1", "d1");
		assertThat(Files.list(emptyStateDir)).isNotEmpty();
		assertThat(this.registry.get(DeduplicationMeters.RECORDS)
			.tags("outcome", "dropped", "reason", "duplicate")
			.counter()
			.count()).isEqualTo(2);
	}

	@Test
	void dropsCopiesOnTheInstanceThatTakesOverAPartitionInARebalance() {
		List<String> topics = TestBroker.createTopics("rebalance", 2, "in", "out");
		String applicationId = "rebalance-" + UUID.randomUUID();
		List<String> keys = IntStream.range(0, 10).mapToObj((i) -> "k" + i).toList();
		KafkaStreams first = start(applicationId, "first", topics, (builder) -> builder, null);
		keys.forEach((key) -> TestBroker.send(topics.get(0), key, key + "-1"));
		assertThat(TestBroker.readCommitted(topics.get(1), 10, Duration.ofSeconds(30))).hasSize(10);

		KafkaStreams second = start(applicationId, "second", topics, (builder) -> builder, null);
		await().atMost(Duration.ofSeconds(60)).until(() -> activeTasks(first) == 1 && activeTasks(second) == 1);
		keys.forEach((key) -> TestBroker.send(topics.get(0), key, key + "-2"));
		List.of("n1", "n2", "n3", "n4").forEach((key) -> TestBroker.send(topics.get(0), key, key + "-1"));

		closeLeavingTheGroup(first);
		await().atMost(Duration.ofSeconds(60)).until(() -> activeTasks(second) == 2);
		keys.forEach((key) -> TestBroker.send(topics.get(0), key, key + "-3"));
		List.of("n5", "n6").forEach((key) -> TestBroker.send(topics.get(0), key, key + "-1"));

		List<String> expected = new ArrayList<>(keys.stream().map((key) -> key + "-1").toList());
		expected.addAll(List.of("n1-1", "n2-1", "n3-1", "n4-1", "n5-1", "n6-1"));
		assertThat(TestBroker.readCommitted(topics.get(1), 16, Duration.ofSeconds(30)))
			.containsExactlyInAnyOrderElementsOf(expected);
	}

	@Test
	void neitherLosesNorDuplicatesOutputWhenTheThreadCrashesBetweenTheStoreUpdateAndCommitUnderExactlyOnce() {
		List<String> topics = TestBroker.createTopics("crash", 1, "in", "out");
		String applicationId = "crash-" + UUID.randomUUID();
		AtomicBoolean crashed = new AtomicBoolean();
		AtomicInteger replacedThreads = new AtomicInteger();
		KafkaStreams streams = start(applicationId, "only", topics, (builder) -> builder,
				(unique) -> unique.foreach((key, value) -> {
					if (value.equals("x1") && crashed.compareAndSet(false, true)) {
						throw new IllegalStateException("crash after the store update, before the output");
					}
				}), replacedThreads);
		for (String key : List.of("a", "b", "x", "a", "c", "x", "b")) {
			TestBroker.send(topics.get(0), key, key + "1");
		}
		assertThat(TestBroker.readCommitted(topics.get(1), 4, Duration.ofSeconds(60))).containsExactly("a1", "b1",
				"x1", "c1");
		assertThat(crashed).isTrue();
		assertThat(replacedThreads).hasValue(1);
		assertThat(streams.state()).isEqualTo(KafkaStreams.State.RUNNING);
	}

	private KafkaStreams start(String applicationId, String instance, List<String> topics,
			java.util.function.UnaryOperator<Deduplication.Builder<String, String>> customizer,
			Consumer<KStream<String, String>> downstream) {
		return start(applicationId, instance, topics, customizer, downstream, null);
	}

	private KafkaStreams start(String applicationId, String instance, List<String> topics,
			java.util.function.UnaryOperator<Deduplication.Builder<String, String>> customizer,
			Consumer<KStream<String, String>> downstream, AtomicInteger replacedThreads) {
		StreamsBuilder builder = new StreamsBuilder();
		KStream<String, String> unique = builder
			.stream(topics.get(0), Consumed.with(Serdes.String(), Serdes.String()))
			.processValues(customizer.apply(Deduplication.<String, String>builder("orders").meterRegistry(this.registry))
				.build());
		if (downstream != null) {
			// before the sink: a failure there comes after the store update and before the output
			downstream.accept(unique);
		}
		unique.to(topics.get(1), Produced.with(Serdes.String(), Serdes.String()));
		Properties properties = new Properties();
		properties.putAll(TestBroker.streamsProperties(applicationId, this.stateDirs.resolve(instance).toString()));
		properties.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, DeduplicationRocksDBConfigSetter.class);
		if (replacedThreads != null) {
			properties.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
		}
		KafkaStreams streams = new KafkaStreams(builder.build(), properties);
		if (replacedThreads != null) {
			streams.setUncaughtExceptionHandler((ex) -> {
				replacedThreads.incrementAndGet();
				return StreamThreadExceptionResponse.REPLACE_THREAD;
			});
		}
		this.running.add(streams);
		streams.start();
		await().atMost(Duration.ofSeconds(60)).until(() -> streams.state() == KafkaStreams.State.RUNNING);
		return streams;
	}

	private static int activeTasks(KafkaStreams streams) {
		return streams.metadataForLocalThreads().stream().mapToInt((thread) -> thread.activeTasks().size()).sum();
	}

	// KafkaStreams.CloseOptions is deprecated since Kafka 4.2 in favour of the top-level
	// CloseOptions, which Kafka 4.1 (Spring Boot 4.0's) does not have; both lines have this one.
	@SuppressWarnings("deprecation")
	private static void closeLeavingTheGroup(KafkaStreams streams) {
		streams.close(new KafkaStreams.CloseOptions().leaveGroup(true).timeout(Duration.ofSeconds(10)));
	}

}
