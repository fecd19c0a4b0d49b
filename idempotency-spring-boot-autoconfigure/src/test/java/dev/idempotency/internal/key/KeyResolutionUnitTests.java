package dev.idempotency.internal.key;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import dev.idempotency.Idempotent;
import dev.idempotency.InboundMessage;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

import org.springframework.util.ReflectionUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Tests for {@link DefaultIdempotencyKeyResolver}, {@link RecordCoordinates} and
 * {@link StoredKey}.
 */
class KeyResolutionUnitTests {

	private final DefaultIdempotencyKeyResolver resolver = new DefaultIdempotencyKeyResolver("X-Idempotency-Key");

	@Test
	void readsTheKeyHeader() {
		ConsumerRecord<String, String> record = record("payments", 0, 7);
		record.headers().add("X-Idempotency-Key", "abc-123".getBytes(StandardCharsets.UTF_8));
		assertThat(this.resolver.resolve(message(record, "plain"))).isEqualTo("abc-123");
	}

	@Test
	void usesTheLastKeyHeader() {
		ConsumerRecord<String, String> record = record("payments", 0, 7);
		record.headers().add("X-Idempotency-Key", "first".getBytes(StandardCharsets.UTF_8));
		record.headers().add("X-Idempotency-Key", "second".getBytes(StandardCharsets.UTF_8));
		assertThat(this.resolver.resolve(message(record, "plain"))).isEqualTo("second");
	}

	@Test
	void reportsNoKeyWhenTheHeaderIsAbsentOrEmpty() {
		ConsumerRecord<String, String> record = record("payments", 0, 7);
		assertThat(this.resolver.resolve(message(record, "plain"))).isNull();
		record.headers().add("X-Idempotency-Key", new byte[0]);
		assertThat(this.resolver.resolve(message(record, "plain"))).isNull();
	}

	@Test
	void keepsDistinctBinaryKeysDistinct() {
		// two byte sequences that are not UTF-8 would both decode to U+FFFD replacement characters
		ConsumerRecord<String, String> first = record("payments", 0, 1);
		first.headers().add("X-Idempotency-Key", new byte[] { (byte) 0xC3, (byte) 0x28 });
		ConsumerRecord<String, String> second = record("payments", 0, 2);
		second.headers().add("X-Idempotency-Key", new byte[] { (byte) 0xC3, (byte) 0x29 });
		String firstKey = this.resolver.resolve(message(first, "plain"));
		String secondKey = this.resolver.resolve(message(second, "plain"));
		assertThat(firstKey).startsWith("sha256:").isNotEqualTo(secondKey);
	}

	@Test
	void evaluatesTheKeyExpressionOverThePayload() {
		ConsumerRecord<String, String> record = record("orders", 2, 9);
		Order payload = new Order("order-42", 10);
		assertThat(this.resolver.resolve(message(record, payload, "byOrderId"))).isEqualTo("order-42");
	}

	@Test
	void evaluatesTheKeyExpressionOverHeadersAndCoordinates() {
		ConsumerRecord<String, String> record = record("orders", 2, 9);
		record.headers().add("tenant", "acme".getBytes(StandardCharsets.UTF_8));
		assertThat(this.resolver.resolve(message(record, "x", "byTenantAndOffset"))).isEqualTo("acme:orders-2-9");
	}

	@Test
	void aByteArrayRecordKeyIsAKeyByItsBytes() {
		ConsumerRecord<byte[], String> first = new ConsumerRecord<>("orders", 0, 1, bytes("order-1"), "v");
		ConsumerRecord<byte[], String> copy = new ConsumerRecord<>("orders", 0, 2, bytes("order-1"), "v");
		assertThat(this.resolver.resolve(message(first, "byRecordKey"))).isEqualTo("order-1")
			.isEqualTo(this.resolver.resolve(message(copy, "byRecordKey")));
		ConsumerRecord<byte[], String> binary = new ConsumerRecord<>("orders", 0, 3, new byte[] { (byte) 0xC3, 0x28 },
				"v");
		ConsumerRecord<byte[], String> otherBinary = new ConsumerRecord<>("orders", 0, 4,
				new byte[] { (byte) 0xC3, 0x29 }, "v");
		assertThat(this.resolver.resolve(message(binary, "byRecordKey"))).startsWith("sha256:")
			.isNotEqualTo(this.resolver.resolve(message(otherBinary, "byRecordKey")));
		assertThat(this.resolver.resolve(message(first, ByteBuffer.wrap(bytes("order-1")), "byPayload")))
			.isEqualTo("order-1");
	}

	@Test
	void refusesAKeyWhoseTextWouldBeItsIdentity() {
		ConsumerRecord<String, String> record = record("orders", 2, 9);
		assertThatIllegalArgumentException().isThrownBy(() -> this.resolver.resolve(message(record, new Object(), "byPayload")))
			.withMessageContaining("java.lang.Object")
			.withMessageContaining("payload");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.resolver.resolve(message(record, new long[] { 1 }, "byPayload")))
			.withMessageContaining("long[]");
	}

	@Test
	void keyExpressionThatYieldsNullMeansNoKey() {
		ConsumerRecord<String, String> record = record("orders", 2, 9);
		assertThat(this.resolver.resolve(message(record, "x", "byMissingHeader"))).isNull();
	}

	@Test
	void rejectsAnUnparsableExpression() {
		assertThatIllegalArgumentException().isThrownBy(() -> KeyExpressions.parse("payload.("))
			.withMessageContaining("Invalid key expression 'payload.('");
	}

	@Test
	void coordinatesOfAPlainRecord() {
		assertThat(RecordCoordinates.keyOf(record("payments", 3, 99))).isEqualTo("payments-3-99");
	}

	@Test
	void coordinatesOfADeadLetterRecordAreThoseOfTheOriginal() {
		ConsumerRecord<String, String> record = record("payments-dlt", 0, 5);
		record.headers().add("kafka_dlt-original-topic", "payments".getBytes(StandardCharsets.UTF_8));
		record.headers().add("kafka_dlt-original-partition", ByteBuffer.allocate(4).putInt(3).array());
		record.headers().add("kafka_dlt-original-offset", ByteBuffer.allocate(8).putLong(99L).array());
		assertThat(RecordCoordinates.keyOf(record)).isEqualTo("payments-3-99");
	}

	@Test
	void storesShortKeysAsTheyAre() {
		String key = "k".repeat(StoredKey.MAX_LENGTH);
		assertThat(StoredKey.of(key)).isSameAs(key);
	}

	@Test
	void storesLongKeysAsADigestThatKeepsThemApart() {
		String common = "k".repeat(StoredKey.MAX_LENGTH);
		String first = StoredKey.of(common + "1");
		String second = StoredKey.of(common + "2");
		assertThat(first).startsWith("sha256:").hasSize(71).isNotEqualTo(second);
		assertThat(StoredKey.of(common + "1")).isEqualTo(first);
	}

	@Test
	void storesKeysWithAnUnpairedSurrogateAsADigestThatKeepsThemApart() {
		String high = StoredKey.of("k\uD800");
		String low = StoredKey.of("k\uDC00");
		assertThat(high).startsWith("sha256:").isNotEqualTo(low).isNotEqualTo(StoredKey.of("k?"));
		assertThat(StoredKey.of("k\uD800")).isEqualTo(high);
		// a well-formed pair stays as it is
		String pair = "k\uD83D\uDE00";
		assertThat(StoredKey.of(pair)).isSameAs(pair);
	}

	@Test
	void tellsWhichExpressionsMayReadThePayload() {
		// a key that depends on the record alone can be resolved before conversion
		assertThat(KeyExpressions.readsPayload("key")).isFalse();
		assertThat(KeyExpressions.readsPayload("headers['tenant'] + ':' + topic + '-' + partition + '-' + offset"))
			.isFalse();
		assertThat(KeyExpressions.readsPayload("record.value()")).isFalse();
		assertThat(KeyExpressions.readsPayload("payload")).isTrue();
		assertThat(KeyExpressions.readsPayload("payload.orderId")).isTrue();
		assertThat(KeyExpressions.readsPayload("getPayload().toString()")).isTrue();
		assertThat(KeyExpressions.readsPayload("headers['a'] ?: payload")).isTrue();
		// the root as a whole may reach the payload
		assertThat(KeyExpressions.readsPayload("#root.payload")).isTrue();
		assertThat(KeyExpressions.readsPayload("#root")).isTrue();
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

	private static ConsumerRecord<String, String> record(String topic, int partition, long offset) {
		return new ConsumerRecord<>(topic, partition, offset, "k", "v");
	}

	private static InboundMessage message(ConsumerRecord<?, ?> record, String methodName) {
		return message(record, record.value(), methodName);
	}

	private static InboundMessage message(ConsumerRecord<?, ?> record, Object payload, String methodName) {
		Method method = ReflectionUtils.findMethod(Listeners.class, methodName, Object.class);
		return new InboundMessage(record, payload, method, method.getAnnotation(Idempotent.class));
	}

	record Order(String orderId, int quantity) {
	}

	static class Listeners {

		@Idempotent
		void plain(Object payload) {
		}

		@Idempotent(key = "payload.orderId")
		void byOrderId(Object payload) {
		}

		@Idempotent(key = "headers['tenant'] + ':' + topic + '-' + partition + '-' + offset")
		void byTenantAndOffset(Object payload) {
		}

		@Idempotent(key = "key")
		void byRecordKey(Object payload) {
		}

		@Idempotent(key = "payload")
		void byPayload(Object payload) {
		}

		@Idempotent(key = "headers['absent']")
		void byMissingHeader(Object payload) {
		}

	}

}
