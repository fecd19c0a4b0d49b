package dev.idempotency.internal.key;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.function.Function;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.expression.Expression;

/**
 * SHA-256 fingerprints of record payloads, as 64 hexadecimal digits: of the value of a
 * SpEL expression (its string form) when one is given, else of the record value (a
 * {@code String} as UTF-8, a {@code byte[]} as it is, another object as JSON).
 */
public final class Fingerprints {

	private Fingerprints() {
	}

	/**
	 * Fingerprint a record.
	 * @param record the record
	 * @param payload the converted listener payload
	 * @param expression the fingerprint expression, or {@code null} for the record value
	 * @param json writes an object as JSON bytes, or {@code null} when there is no JSON
	 * mapper
	 * @return the fingerprint
	 * @throws IllegalStateException if the record value is an object and there is no JSON
	 * mapper
	 */
	public static String of(ConsumerRecord<?, ?> record, @Nullable Object payload, @Nullable Expression expression,
			@Nullable Function<Object, byte[]> json) {
		if (expression != null) {
			String value = KeyExpressions.evaluate(expression, record, payload);
			return sha256((value != null) ? value.getBytes(StandardCharsets.UTF_8) : new byte[0]);
		}
		Object value = record.value();
		if (value == null) {
			return sha256(new byte[0]);
		}
		if (value instanceof byte[] bytes) {
			return sha256(bytes);
		}
		if (value instanceof String text) {
			return sha256(text.getBytes(StandardCharsets.UTF_8));
		}
		if (json == null) {
			throw new IllegalStateException("Cannot fingerprint a record value of type " + value.getClass().getName()
					+ " without a Jackson JsonMapper: give @Idempotent a fingerprintExpression");
		}
		return sha256(json.apply(value));
	}

	static String sha256(byte[] bytes) {
		try {
			return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException("SHA-256 is not available", ex);
		}
	}

}
