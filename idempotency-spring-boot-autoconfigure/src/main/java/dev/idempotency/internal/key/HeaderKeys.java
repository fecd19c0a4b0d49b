package dev.idempotency.internal.key;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Turns header bytes into key text without losing distinctness: two different byte
 * sequences never become the same key.
 */
final class HeaderKeys {

	private HeaderKeys() {
	}

	/**
	 * Return the header value as a key. Valid UTF-8 without NUL characters is used as text;
	 * anything else (binary ids, broken encodings) is replaced by a digest of its bytes, so
	 * that lossy decoding can never make two different keys equal.
	 * @param value the header bytes
	 * @return the key text
	 */
	static String text(byte[] value) {
		try {
			CharBuffer chars = StandardCharsets.UTF_8.newDecoder()
				.onMalformedInput(CodingErrorAction.REPORT)
				.onUnmappableCharacter(CodingErrorAction.REPORT)
				.decode(ByteBuffer.wrap(value));
			String text = chars.toString();
			return (text.indexOf('\0') < 0) ? text : StoredKey.digest(value);
		}
		catch (CharacterCodingException ex) {
			return StoredKey.digest(value);
		}
	}

}
