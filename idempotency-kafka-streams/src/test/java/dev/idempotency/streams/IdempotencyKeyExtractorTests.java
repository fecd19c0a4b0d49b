package dev.idempotency.streams;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Properties;

import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Extractors that turn a record key or a value field into an idempotency key do so by the
 * value's content: two copies of a message get the same key whatever the type of the key,
 * and a value with no textual form of its own is refused instead of keyed by its identity.
 */
class IdempotencyKeyExtractorTests {

	@TempDir
	Path stateDir;

	private final RecordHeaders headers = new RecordHeaders();

	@Test
	void twoCopiesOfAByteArrayRecordKeyGiveTheSameKey() {
		IdempotencyKeyExtractor<Object, String> extractor = IdempotencyKeyExtractor.recordKey();
		String first = extractor.extract(bytes("order-1"), "v", this.headers);
		assertThat(first).isEqualTo("order-1");
		assertThat(extractor.extract(bytes("order-1"), "v", this.headers)).isEqualTo(first);
		assertThat(extractor.extract(bytes("order-2"), "v", this.headers)).isNotEqualTo(first);
		assertThat(extractor.extract(ByteBuffer.wrap(bytes("order-1")), "v", this.headers)).isEqualTo(first);
		assertThat(extractor.extract(Bytes.wrap(bytes("order-1")), "v", this.headers)).isEqualTo(first);
	}

	@Test
	void aBinaryRecordKeyIsKeyedByAllOfItsBytes() {
		IdempotencyKeyExtractor<Object, String> extractor = IdempotencyKeyExtractor.recordKey();
		String first = extractor.extract(new byte[] { (byte) 0xff, 1, 2 }, "v", this.headers);
		assertThat(extractor.extract(new byte[] { (byte) 0xff, 1, 2 }, "v", this.headers)).isEqualTo(first);
		assertThat(extractor.extract(new byte[] { (byte) 0xfe, 1, 2 }, "v", this.headers)).isNotEqualTo(first);
	}

	@Test
	void aValueFieldIsKeyedByItsContent() {
		IdempotencyKeyExtractor<String, Order> extractor = IdempotencyKeyExtractor.value(Order::id);
		assertThat(extractor.extract("k", new Order(bytes("p-7")), this.headers))
			.isEqualTo(extractor.extract("k", new Order(bytes("p-7")), this.headers))
			.isEqualTo("p-7");
		assertThat(IdempotencyKeyExtractor.<String, Long>value((value) -> value).extract("k", 42L, this.headers))
			.isEqualTo("42");
	}

	@Test
	void aKeyWithoutATextualFormOfItsOwnIsRefused() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> IdempotencyKeyExtractor.recordKey().extract(new Object(), "v", this.headers))
			.withMessageContaining("java.lang.Object")
			.withMessageContaining("toString");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> IdempotencyKeyExtractor.<String, int[]>value((value) -> value)
				.extract("k", new int[] { 1 }, this.headers))
			.withMessageContaining("int[]");
	}

	@Test
	void dropsTheCopiesOfARecordWhoseKeyIsAByteArray() {
		StreamsBuilder builder = new StreamsBuilder();
		builder.stream("orders", Consumed.with(Serdes.ByteArray(), Serdes.String()))
			.processValues(Deduplication.<byte[], String>builder("orders")
				.keyExtractor(IdempotencyKeyExtractor.recordKey())
				.meterRegistry(new SimpleMeterRegistry())
				.build())
			.to("unique-orders", Produced.with(Serdes.ByteArray(), Serdes.String()));
		Properties properties = new Properties();
		properties.put(StreamsConfig.APPLICATION_ID_CONFIG, "key-extractor-tests");
		properties.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
		properties.put(StreamsConfig.STATE_DIR_CONFIG, this.stateDir.toString());
		try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), properties)) {
			TestInputTopic<byte[], String> input = driver.createInputTopic("orders", new ByteArraySerializer(),
					new StringSerializer());
			TestOutputTopic<byte[], String> output = driver.createOutputTopic("unique-orders",
					new ByteArrayDeserializer(), new StringDeserializer());
			Instant now = Instant.parse("2026-01-01T00:00:00Z");
			input.pipeInput(new TestRecord<>(bytes("order-1"), "first", now));
			input.pipeInput(new TestRecord<>(bytes("order-1"), "copy", now.plusSeconds(1)));
			input.pipeInput(new TestRecord<>(bytes("order-2"), "other", now.plusSeconds(2)));
			assertThat(output.readValuesToList()).containsExactly("first", "other");
		}
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

	record Order(byte[] id) {
	}

}
