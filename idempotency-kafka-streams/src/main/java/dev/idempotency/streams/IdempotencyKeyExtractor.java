package dev.idempotency.streams;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Objects;
import java.util.function.Function;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.jspecify.annotations.Nullable;

/**
 * Finds the idempotency key of a record: the value two copies of the same logical message
 * share. Return {@code null} when the record has none (the processor then applies its
 * {@link StreamsMissingKeyPolicy}); an exception is reported as an
 * {@link IdempotencyKeyExtractionException} naming the record.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
@FunctionalInterface
public interface IdempotencyKeyExtractor<K, V> {

	/**
	 * Return the idempotency key of a record.
	 * @param key the record key
	 * @param value the record value
	 * @param headers the record headers
	 * @return the idempotency key, or {@code null} when the record has none
	 */
	@Nullable String extract(@Nullable K key, @Nullable V value, Headers headers);

	/**
	 * An extractor that reads the last header of the given name. Valid UTF-8 without NUL
	 * characters is used as text; any other bytes become a NUL character followed by their
	 * hex form, so that two different header values never give the same key.
	 * @param name the header name, for example {@code X-Idempotency-Key}
	 * @param <K> the record key type
	 * @param <V> the record value type
	 * @return the extractor
	 */
	static <K, V> IdempotencyKeyExtractor<K, V> header(String name) {
		Objects.requireNonNull(name, "name must not be null");
		return (key, value, headers) -> {
			Header header = headers.lastHeader(name);
			return (header != null && header.value() != null) ? text(header.value()) : null;
		};
	}

	/**
	 * An extractor that uses the record key: a {@code byte[]} or {@code ByteBuffer} key by
	 * its bytes, as the header extractor reads a header; any other key by its
	 * {@code toString} (Kafka's {@code Bytes} writes its content), which its class must
	 * define (a key whose text would be its
	 * identity, such as {@code Object}'s or an array's, is refused with an
	 * {@code IllegalArgumentException}, since two copies of a message would never match).
	 * @param <K> the record key type
	 * @param <V> the record value type
	 * @return the extractor
	 */
	static <K, V> IdempotencyKeyExtractor<K, V> recordKey() {
		return (key, value, headers) -> (key != null) ? text(key) : null;
	}

	/**
	 * An extractor that reads a field of the record value, for example
	 * {@code IdempotencyKeyExtractor.value(Payment::paymentId)}. A {@code null} value or
	 * field means the record has no key. The field becomes a key as a record key does in
	 * {@link #recordKey()}.
	 * @param field the function that reads the field
	 * @param <K> the record key type
	 * @param <V> the record value type
	 * @return the extractor
	 */
	static <K, V> IdempotencyKeyExtractor<K, V> value(Function<? super V, ? extends @Nullable Object> field) {
		Objects.requireNonNull(field, "field must not be null");
		return (key, value, headers) -> {
			if (value == null) {
				return null;
			}
			Object result = field.apply(value);
			return (result != null) ? text(result) : null;
		};
	}

	/**
	 * Return a key object as text: bytes by their content, anything else by a
	 * {@code toString} of its own class or a superclass other than {@code Object}.
	 */
	private static String text(Object key) {
		if (key instanceof String text) {
			return text;
		}
		if (key instanceof byte[] bytes) {
			return text(bytes);
		}
		if (key instanceof ByteBuffer buffer) {
			byte[] bytes = new byte[buffer.remaining()];
			buffer.duplicate().get(bytes);
			return text(bytes);
		}
		if (!OwnToString.of(key.getClass())) {
			throw new IllegalArgumentException("A key of type " + key.getClass().getTypeName()
					+ " has no toString of its own: its text would be its identity, different for every copy of a "
					+ "message; extract a String, a number or bytes instead");
		}
		return key.toString();
	}

	private static String text(byte[] bytes) {
		if (isAsciiWithoutNul(bytes)) {
			// the common case, without a decoder: ASCII is valid UTF-8 and decodes to itself
			return new String(bytes, StandardCharsets.US_ASCII);
		}
		try {
			String text = StandardCharsets.UTF_8.newDecoder()
				.onMalformedInput(CodingErrorAction.REPORT)
				.onUnmappableCharacter(CodingErrorAction.REPORT)
				.decode(ByteBuffer.wrap(bytes))
				.toString();
			if (text.indexOf('\0') < 0) {
				return text;
			}
		}
		catch (CharacterCodingException ex) {
			// not text: fall through to the hex form
		}
		return '\0' + HexFormat.of().formatHex(bytes);
	}

	private static boolean isAsciiWithoutNul(byte[] bytes) {
		for (byte b : bytes) {
			if (b <= 0) {
				return false;
			}
		}
		return true;
	}

}
