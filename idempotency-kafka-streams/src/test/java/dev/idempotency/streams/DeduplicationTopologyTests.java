package dev.idempotency.streams;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The decisions of the deduplicating processor, on a RocksDB store in Kafka Streams'
 * {@link TopologyTestDriver}, with and without the in-memory Bloom pre-check.
 */
class DeduplicationTopologyTests {

	private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

	@TempDir
	Path stateDir;

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	private TopologyTestDriver driver;

	private TestInputTopic<String, String> input;

	private TestOutputTopic<String, String> output;

	@AfterEach
	void close() {
		if (this.driver != null) {
			this.driver.close();
		}
	}

	@ParameterizedTest(name = "Bloom pre-check {0}")
	@ValueSource(booleans = { false, true })
	void forwardsTheFirstRecordOfAKeyAndDropsTheCopiesWithinTheWindow(boolean preCheck) {
		start((builder) -> preCheck ? builder.bloomPreCheck(1000, 0.01) : builder.withoutBloomPreCheck());
		send("k1", "first", "a", T0);
		send("k1", "copy", "a", T0.plusSeconds(10));
		send("k2", "other", "b", T0.plusSeconds(20));
		send("k1", "late copy", "a", T0.plusSeconds(3599));
		assertThat(values()).containsExactly("first", "other");
		assertThat(count("forwarded", "new")).isEqualTo(2);
		assertThat(count("dropped", "duplicate")).isEqualTo(2);
	}

	@ParameterizedTest(name = "Bloom pre-check {0}")
	@ValueSource(booleans = { false, true })
	void forwardsAKeyAgainOnceTheWindowHasPassedAndPurgesItAfterTheGracePeriod(boolean preCheck) {
		start((builder) -> preCheck ? builder.bloomPreCheck(1000, 0.01) : builder.withoutBloomPreCheck());
		send("k1", "first", "a", T0);
		send("k2", "other", "b", T0.plus(Duration.ofMinutes(61)));
		send("k1", "again", "a", T0.plus(Duration.ofMinutes(61)));
		assertThat(values()).containsExactly("first", "other", "again");

		send("k3", "moves stream time", "c", T0.plus(Duration.ofMinutes(200)));
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		KeyValueStore<String, Long> store = this.driver.getKeyValueStore("orders" + Deduplication.STORE_SUFFIX);
		assertThat(store.get("a")).isNull();
		assertThat(store.get("b")).isNull();
		assertThat(store.get("c")).isEqualTo(T0.plus(Duration.ofMinutes(200)).toEpochMilli());
		send("k1", "after purge", "a", T0.plus(Duration.ofMinutes(201)));
		send("k3", "copy", "c", T0.plus(Duration.ofMinutes(201)));
		assertThat(values()).containsExactly("moves stream time", "after purge");
	}

	@ParameterizedTest(name = "Bloom pre-check {0}")
	@ValueSource(booleans = { false, true })
	void keepsTheKeysThatAreWithinTheWindowPlusGraceWhenPurging(boolean preCheck) {
		start((builder) -> preCheck ? builder.bloomPreCheck(1000, 0.01) : builder.withoutBloomPreCheck());
		send("k1", "first", "a", T0);
		send("k2", "other", "b", T0.plus(Duration.ofMinutes(60)));
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		send("k1", "copy", "a", T0.plus(Duration.ofMinutes(60)));
		assertThat(values()).containsExactly("first", "other");
	}

	/**
	 * A purge reads the store in slices, one every {@code PURGE_SLICE_INTERVAL}, so that
	 * the stream thread never stops for a scan of the whole store: every expired key is
	 * deleted over the slices, and the keys within the window stay.
	 */
	@Test
	void purgesTheStoreInSlicesUntilEveryExpiredKeyIsGone() {
		start((builder) -> builder.purgeSliceKeys(2));
		List<String> old = List.of("a", "b", "c", "d", "e", "f");
		for (String key : old) {
			send("k-" + key, "old " + key, key, T0);
		}
		send("k-g", "moves stream time", "g", T0.plus(Duration.ofMinutes(200)));
		KeyValueStore<String, Long> store = this.driver.getKeyValueStore("orders" + Deduplication.STORE_SUFFIX);
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		// the first slice read two keys: the others wait for the next slices
		assertThat(old.stream().filter((key) -> store.get(key) != null)).hasSize(4);
		for (int slice = 0; slice < 4; slice++) {
			this.driver.advanceWallClockTime(DeduplicatingProcessor.PURGE_SLICE_INTERVAL);
		}
		assertThat(old.stream().filter((key) -> store.get(key) != null)).isEmpty();
		assertThat(store.get("g")).isEqualTo(T0.plus(Duration.ofMinutes(200)).toEpochMilli());
		send("k-a", "a again", "a", T0.plus(Duration.ofMinutes(201)));
		send("k-g", "copy", "g", T0.plus(Duration.ofMinutes(201)));
		assertThat(values()).containsExactly("old a", "old b", "old c", "old d", "old e", "old f",
				"moves stream time", "a again");
	}

	/**
	 * A slice of a purge also stops once it has held the stream thread for its time
	 * budget, whatever its keys cost (here every reading of the clock moves it on by a
	 * millisecond, and the budget is 3 ms); the next slices go on from where it stopped.
	 */
	@Test
	void stopsASliceOfAPurgeOnceItsTimeBudgetIsSpent() {
		AtomicLong nanos = new AtomicLong();
		start((builder) -> builder.purgeSliceBudget(Duration.ofMillis(3),
				() -> nanos.addAndGet(Duration.ofMillis(1).toNanos())));
		List<String> old = List.of("a", "b", "c", "d", "e", "f");
		for (String key : old) {
			send("k-" + key, "old " + key, key, T0);
		}
		send("k-g", "moves stream time", "g", T0.plus(Duration.ofMinutes(200)));
		KeyValueStore<String, Long> store = this.driver.getKeyValueStore("orders" + Deduplication.STORE_SUFFIX);
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		assertThat(old.stream().filter((key) -> store.get(key) != null)).isNotEmpty().hasSizeLessThan(old.size());
		for (int slice = 0; slice < 6; slice++) {
			this.driver.advanceWallClockTime(DeduplicatingProcessor.PURGE_SLICE_INTERVAL);
		}
		assertThat(old.stream().filter((key) -> store.get(key) != null)).isEmpty();
		assertThat(store.get("g")).isEqualTo(T0.plus(Duration.ofMinutes(200)).toEpochMilli());
		send("k-a", "a again", "a", T0.plus(Duration.ofMinutes(201)));
		send("k-g", "copy", "g", T0.plus(Duration.ofMinutes(201)));
		assertThat(values()).containsExactly("old a", "old b", "old c", "old d", "old e", "old f",
				"moves stream time", "a again");
	}

	/**
	 * A purged key leaves a tombstone in the store's changelog, so that a store restored
	 * from it does not hold the key again, and the compacted changelog drops the key.
	 */
	@Test
	void writesATombstoneToTheChangelogForEachPurgedKey() {
		start(UnaryOperator.identity());
		send("k1", "first", "a", T0);
		send("k2", "other", "b", T0.plusSeconds(1));
		send("k3", "moves stream time", "c", T0.plus(Duration.ofMinutes(200)));
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		TestOutputTopic<String, Long> changelog = this.driver.createOutputTopic(
				"deduplication-topology-tests-orders" + Deduplication.STORE_SUFFIX + "-changelog",
				new StringDeserializer(), new LongDeserializer());
		assertThat(changelog.readKeyValuesToList()).containsExactly(KeyValue.pair("a", T0.toEpochMilli()),
				KeyValue.pair("b", T0.plusSeconds(1).toEpochMilli()),
				KeyValue.pair("c", T0.plus(Duration.ofMinutes(200)).toEpochMilli()), KeyValue.pair("a", null),
				KeyValue.pair("b", null));
	}

	/**
	 * A purge reads the store only once a key may have expired: the oldest key stored
	 * decides, a late record's included.
	 */
	@ParameterizedTest(name = "in memory {0}")
	@ValueSource(booleans = { false, true })
	void purgesOnceAKeyMayHaveExpiredALateRecordsKeyIncluded(boolean inMemory) {
		start((builder) -> inMemory ? builder.inMemory() : builder);
		KeyValueStore<String, Long> store = this.driver.getKeyValueStore("orders" + Deduplication.STORE_SUFFIX);
		send("k1", "first", "a", T0);
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		send("k2", "second", "b", T0.plus(Duration.ofMinutes(30)));
		// nothing can have expired: no purge reads the store
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		send("k3", "moves stream time", "c", T0.plus(Duration.ofMinutes(200)));
		send("k4", "late", "d", T0.plus(Duration.ofMinutes(5)));
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		assertThat(store.get("a")).isNull();
		assertThat(store.get("b")).isNull();
		assertThat(store.get("d")).isNull();
		assertThat(store.get("c")).isEqualTo(T0.plus(Duration.ofMinutes(200)).toEpochMilli());
		// a late record stored after a purge that found nothing to delete
		send("k5", "late again", "e", T0.plus(Duration.ofMinutes(5)));
		assertThat(store.get("e")).isNotNull();
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		assertThat(store.get("e")).isNull();
		assertThat(values()).containsExactly("first", "second", "moves stream time", "late", "late again");
	}

	/**
	 * With the Bloom pre-check, the purge's slices build the next filter: a key stored
	 * while they run, behind or ahead of where they read, is in it as well as every key
	 * they read, and the expired keys are not.
	 */
	@Test
	void buildsTheNextBloomFilterInThePurgesSlicesWithTheKeysStoredMeanwhile() {
		start((builder) -> builder.bloomPreCheck(1000, 0.01).purgeSliceKeys(2));
		List<String> kept = List.of("b", "c", "d", "e", "f");
		send("k-a", "old a", "a", T0);
		for (String key : kept) {
			send("k-" + key, key, key, T0.plus(Duration.ofMinutes(100)));
		}
		send("k-g", "moves stream time", "g", T0.plus(Duration.ofMinutes(150)));
		// the first slice reads a (expired) and b
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		send("k-0", "behind the slices", "0", T0.plus(Duration.ofMinutes(150)));
		send("k-z", "ahead of the slices", "z", T0.plus(Duration.ofMinutes(150)));
		for (String key : kept) {
			send("k-" + key, "copy while building", key, T0.plus(Duration.ofMinutes(150)));
		}
		for (int slice = 0; slice < 10; slice++) {
			this.driver.advanceWallClockTime(DeduplicatingProcessor.PURGE_SLICE_INTERVAL);
		}
		KeyValueStore<String, Long> store = this.driver.getKeyValueStore("orders" + Deduplication.STORE_SUFFIX);
		assertThat(store.get("a")).isNull();
		for (String key : List.of("0", "z", "b", "c", "d", "e", "f", "g")) {
			send("k-" + key, "copy once built", key, T0.plus(Duration.ofMinutes(151)));
		}
		send("k-a", "a again", "a", T0.plus(Duration.ofMinutes(151)));
		assertThat(values()).containsExactly("old a", "b", "c", "d", "e", "f", "moves stream time",
				"behind the slices", "ahead of the slices", "a again");
		assertThat(count("dropped", "duplicate")).isEqualTo(13);
	}

	/**
	 * A Bloom filter that holds more keys than it was sized for grows a layer for twice as
	 * many again, at once and without a scan of the store; a purge that rebuilds it from
	 * the store makes one layer again: no key is lost on the way.
	 */
	@ParameterizedTest(name = "in memory {0}")
	@ValueSource(booleans = { false, true })
	void growsAFullBloomFilterAndKeepsEveryKey(boolean inMemory) {
		start((builder) -> {
			builder.bloomPreCheck(4, 0.01).purgeSliceKeys(10);
			return inMemory ? builder.inMemory() : builder;
		});
		List<String> keys = java.util.stream.IntStream.range(0, 40).mapToObj((i) -> "key-" + i).toList();
		for (String key : keys) {
			send("k", key, key, T0);
		}
		// grown as the keys came, before any purge
		for (String key : keys) {
			send("k", "copy of " + key, key, T0.plusSeconds(1));
		}
		for (int slice = 0; slice < 10; slice++) {
			this.driver.advanceWallClockTime(slice == 0 ? Duration.ofMinutes(1) : DeduplicatingProcessor.PURGE_SLICE_INTERVAL);
		}
		for (String key : keys) {
			send("k", "copy of " + key, key, T0.plusSeconds(2));
		}
		send("k", "new", "key-40", T0.plusSeconds(2));
		assertThat(values()).containsExactlyElementsOf(
				java.util.stream.Stream.concat(keys.stream(), java.util.stream.Stream.of("new")).toList());
		assertThat(count("dropped", "duplicate")).isEqualTo(80);
	}

	/**
	 * One {@code Deduplication} applied to two streams (to drop copies across two topics)
	 * gives each task two processors on one store: they must share what the pre-check
	 * knows, also after one of them purged the store and rebuilt the filter.
	 */
	@ParameterizedTest(name = "Bloom pre-check {0}")
	@ValueSource(booleans = { false, true })
	void dropsCopiesAcrossTwoStreamsThatShareTheProcessor(boolean preCheck) {
		Deduplication.Builder<String, String> builder = Deduplication.<String, String>builder("orders")
			.meterRegistry(this.registry);
		Deduplication<String, String> deduplication = (preCheck ? builder.bloomPreCheck(1000, 0.01) : builder.withoutBloomPreCheck())
			.build();
		StreamsBuilder streams = new StreamsBuilder();
		Consumed<String, String> consumed = Consumed.with(new org.apache.kafka.common.serialization.Serdes.StringSerde(),
				new org.apache.kafka.common.serialization.Serdes.StringSerde());
		Produced<String, String> produced = Produced.with(new org.apache.kafka.common.serialization.Serdes.StringSerde(),
				new org.apache.kafka.common.serialization.Serdes.StringSerde());
		streams.stream("orders", consumed).processValues(deduplication).to("unique-orders", produced);
		streams.stream("more-orders", consumed).processValues(deduplication).to("unique-orders", produced);
		startDriver(streams);
		TestInputTopic<String, String> more = this.driver.createInputTopic("more-orders", new StringSerializer(),
				new StringSerializer());

		send("k1", "first", "a", T0);
		more.pipeInput(new TestRecord<>("k1", "copy from the other topic", keyHeader("a"), T0));
		// the store is purged (a falls out of the window) and the filter rebuilt
		send("k2", "moves stream time", "b", T0.plus(Duration.ofMinutes(200)));
		this.driver.advanceWallClockTime(Duration.ofMinutes(1));
		more.pipeInput(new TestRecord<>("k3", "new on the other topic", keyHeader("c"),
				T0.plus(Duration.ofMinutes(201))));
		send("k3", "copy", "c", T0.plus(Duration.ofMinutes(201)));
		assertThat(values()).containsExactly("first", "moves stream time", "new on the other topic");
	}

	/**
	 * The store keeps one timestamp a key. With a grace longer than the window, a record on
	 * time but older than a stored key by more than the window would be forwarded, and
	 * so would each of its copies: such a configuration is refused.
	 */
	@Test
	void refusesAGraceLongerThanTheWindow() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> Deduplication.<String, String>builder("orders")
				.window(Duration.ofMinutes(1))
				.grace(Duration.ofMinutes(10))
				.build())
			.withMessageContaining("grace (PT10M) must not be longer than the window (PT1M)");
		start((builder) -> builder.window(Duration.ofMinutes(10)).grace(Duration.ofMinutes(10)));
		send("k1", "newer", "a", T0.plus(Duration.ofMinutes(5)));
		send("k1", "older, within the window", "a", T0);
		assertThat(values()).containsExactly("newer");
	}

	@ParameterizedTest(name = "late policy {0}")
	@ValueSource(strings = { "FORWARD", "DROP" })
	void appliesTheLatePolicyToALateRecordWhoseKeyTheStoreDoesNotHold(LateRecordPolicy policy) {
		start((builder) -> builder.latePolicy(policy));
		send("k1", "moves stream time", "a", T0.plus(Duration.ofHours(5)));
		send("k2", "late", "b", T0.plus(Duration.ofHours(5)).minus(Duration.ofMinutes(2)));
		send("k3", "within grace", "c", T0.plus(Duration.ofHours(5)).minus(Duration.ofSeconds(30)));
		if (policy == LateRecordPolicy.FORWARD) {
			assertThat(values()).containsExactly("moves stream time", "late", "within grace");
			assertThat(count("forwarded", "late")).isEqualTo(1);
			assertThat(count("dropped", "late")).isZero();
		}
		else {
			assertThat(values()).containsExactly("moves stream time", "within grace");
			assertThat(count("dropped", "late")).isEqualTo(1);
			assertThat(count("forwarded", "late")).isZero();
		}
		assertThat(count("forwarded", "new")).isEqualTo(2);
	}

	@ParameterizedTest(name = "late policy {0}")
	@ValueSource(strings = { "FORWARD", "DROP" })
	void dropsALateRecordAsADuplicateWhenTheStoreStillHoldsItsKey(LateRecordPolicy policy) {
		start((builder) -> builder.latePolicy(policy));
		send("k1", "first", "a", T0);
		send("k2", "moves stream time", "b", T0.plus(Duration.ofMinutes(30)));
		send("k1", "late copy", "a", T0.plusSeconds(5));
		assertThat(values()).containsExactly("first", "moves stream time");
		assertThat(count("dropped", "duplicate")).isEqualTo(1);
		assertThat(count("forwarded", "late") + count("dropped", "late")).isZero();
	}

	@ParameterizedTest(name = "missing-key policy {0}")
	@ValueSource(strings = { "FORWARD", "DROP", "FAIL" })
	void appliesTheMissingKeyPolicyAndCountsEveryRecordWithoutAKey(StreamsMissingKeyPolicy policy) {
		start((builder) -> builder.missingKeyPolicy(policy));
		send("k1", "keyed", "a", T0);
		if (policy == StreamsMissingKeyPolicy.FAIL) {
			assertThatExceptionOfType(RuntimeException.class).isThrownBy(() -> send("k2", "keyless", null, T0))
				.havingRootCause()
				.isInstanceOf(IdempotencyKeyExtractionException.class)
				.withMessageContaining("has no idempotency key")
				.withMessageContaining("orders-0@1");
			assertThat(values()).containsExactly("keyed");
			assertThat(count("failed", "missing-key")).isEqualTo(1);
			return;
		}
		send("k2", "keyless", null, T0);
		send("k3", "keyless too", null, T0);
		if (policy == StreamsMissingKeyPolicy.FORWARD) {
			assertThat(values()).containsExactly("keyed", "keyless", "keyless too");
			assertThat(count("forwarded", "missing-key")).isEqualTo(2);
		}
		else {
			assertThat(values()).containsExactly("keyed");
			assertThat(count("dropped", "missing-key")).isEqualTo(2);
		}
	}

	/**
	 * A blank key is a missing key, as for {@code @Idempotent} listeners: deduplicated, all
	 * records with an empty header would count as copies of the first.
	 */
	@ParameterizedTest(name = "key \"{0}\"")
	@ValueSource(strings = { "", "  " })
	void treatsABlankKeyAsAMissingKey(String blank) {
		start((builder) -> builder.missingKeyPolicy(StreamsMissingKeyPolicy.FORWARD));
		send("k1", "one", blank, T0);
		send("k2", "two", blank, T0);
		assertThat(values()).containsExactly("one", "two");
		assertThat(count("forwarded", "missing-key")).isEqualTo(2);
	}

	@ParameterizedTest(name = "record key {0}")
	@ValueSource(strings = { "", "k1" })
	void treatsANullRecordKeyAsAMissingKeyWhenTheRecordKeyIsTheIdempotencyKey(String recordKey) {
		start((builder) -> builder.keyExtractor(IdempotencyKeyExtractor.recordKey())
			.missingKeyPolicy(StreamsMissingKeyPolicy.DROP));
		String key = recordKey.isEmpty() ? null : recordKey;
		send(key, "one", null, T0);
		send(key, "two", null, T0);
		if (key == null) {
			assertThat(values()).isEmpty();
			assertThat(count("dropped", "missing-key")).isEqualTo(2);
		}
		else {
			assertThat(values()).containsExactly("one");
			assertThat(count("dropped", "duplicate")).isEqualTo(1);
		}
	}

	@ParameterizedTest(name = "Bloom pre-check {0}")
	@ValueSource(booleans = { false, true })
	void reportsAFailingExtractorWithTheRecordCoordinatesAndForwardsNothing(boolean preCheck) {
		start((builder) -> {
			builder.keyExtractor(IdempotencyKeyExtractor.value((String value) -> {
				if (value.startsWith("bad")) {
					throw new IllegalArgumentException("unparsable payload");
				}
				return value.substring(0, 1);
			}));
			return preCheck ? builder.bloomPreCheck(1000, 0.01) : builder.withoutBloomPreCheck();
		});
		send("k1", "a1", null, T0);
		assertThatExceptionOfType(RuntimeException.class).isThrownBy(() -> send("k2", "bad", null, T0))
			.havingRootCause()
			.isInstanceOf(IllegalArgumentException.class)
			.withMessage("unparsable payload");
		assertThat(values()).containsExactly("a1");
		assertThat(count("failed", "extractor-error")).isEqualTo(1);
		assertThat(this.registry.get(DeduplicationMeters.RECORDS).counters()).hasSize(8);
	}

	@Test
	void keepsKeysThatUtf8CannotEncodeApart() {
		// a key read from a JSON field may hold an unpaired surrogate ("\\ud800"), which
		// UTF-8 cannot encode: Java writes '?' for it
		Map<String, String> keys = Map.of("high", "k\uD800", "low", "k\uDC00", "question", "k?");
		start((builder) -> builder.keyExtractor(IdempotencyKeyExtractor.value(keys::get)));
		send("k1", "high", null, T0);
		send("k1", "low", null, T0);
		send("k1", "question", null, T0);
		send("k1", "high", null, T0);
		assertThat(values()).containsExactly("high", "low", "question");
	}

	@Test
	void keepsAKeyThatLooksLikeAnEncodedOneApartFromTheKeyItLooksLike() {
		// the stored form of "k\uD800" as a key of its own, as a field may hold it
		Map<String, String> keys = Map.of("high", "k\uD800", "lookalike", "\0utf16:006bd800");
		start((builder) -> builder.keyExtractor(IdempotencyKeyExtractor.value(keys::get)));
		send("k1", "high", null, T0);
		send("k1", "lookalike", null, T0);
		send("k1", "lookalike", null, T0);
		assertThat(values()).containsExactly("high", "lookalike");
	}

	@ParameterizedTest(name = "bytes {0}")
	@ValueSource(strings = { "ff00", "00", "c3" })
	void keepsBinaryHeaderValuesDistinctFromText(String hex) {
		start(UnaryOperator.identity());
		byte[] bytes = java.util.HexFormat.of().parseHex(hex);
		RecordHeaders binary = new RecordHeaders();
		binary.add(Deduplication.DEFAULT_KEY_HEADER, bytes);
		this.input.pipeInput(new TestRecord<>("k1", "binary", binary, T0));
		RecordHeaders text = new RecordHeaders();
		text.add(Deduplication.DEFAULT_KEY_HEADER, ("\0" + hex).getBytes(java.nio.charset.StandardCharsets.UTF_8));
		this.input.pipeInput(new TestRecord<>("k1", "text", text, T0));
		assertThat(values()).containsExactly("binary", "text");
	}

	private void start(UnaryOperator<Deduplication.Builder<String, String>> customizer) {
		StreamsBuilder builder = new StreamsBuilder();
		Deduplication<String, String> deduplication = customizer
			.apply(Deduplication.<String, String>builder("orders").meterRegistry(this.registry))
			.build();
		builder.stream("orders", Consumed.with(new org.apache.kafka.common.serialization.Serdes.StringSerde(),
				new org.apache.kafka.common.serialization.Serdes.StringSerde()))
			.processValues(deduplication)
			.to("unique-orders", Produced.with(new org.apache.kafka.common.serialization.Serdes.StringSerde(),
					new org.apache.kafka.common.serialization.Serdes.StringSerde()));
		startDriver(builder);
	}

	private void startDriver(StreamsBuilder builder) {
		Properties properties = new Properties();
		properties.put(StreamsConfig.APPLICATION_ID_CONFIG, "deduplication-topology-tests");
		properties.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
		properties.put(StreamsConfig.STATE_DIR_CONFIG, this.stateDir.toString());
		properties.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, DeduplicationRocksDBConfigSetter.class);
		this.driver = new TopologyTestDriver(builder.build(), properties);
		this.input = this.driver.createInputTopic("orders", new StringSerializer(), new StringSerializer());
		this.output = this.driver.createOutputTopic("unique-orders", new StringDeserializer(),
				new StringDeserializer());
	}

	private void send(String recordKey, String value, String idempotencyKey, Instant timestamp) {
		this.input.pipeInput(new TestRecord<>(recordKey, value, keyHeader(idempotencyKey), timestamp));
	}

	private static RecordHeaders keyHeader(String idempotencyKey) {
		RecordHeaders headers = new RecordHeaders();
		if (idempotencyKey != null) {
			headers.add(Deduplication.DEFAULT_KEY_HEADER,
					idempotencyKey.getBytes(java.nio.charset.StandardCharsets.UTF_8));
		}
		return headers;
	}

	private List<String> values() {
		return this.output.readValuesToList();
	}

	private double count(String outcome, String reason) {
		return this.registry.get(DeduplicationMeters.RECORDS)
			.tags("processor", "orders", "outcome", outcome, "reason", reason)
			.counter()
			.count();
	}

}
