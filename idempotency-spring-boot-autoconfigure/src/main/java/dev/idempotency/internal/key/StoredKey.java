package dev.idempotency.internal.key;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Fits keys and scopes into the store's columns: a value longer than the column is
 * replaced by {@code sha256:} and the hex SHA-256 digest of its UTF-8 bytes, never
 * truncated (truncation would make distinct keys collide). So is a value with a NUL
 * character, which PostgreSQL text cannot hold, and one with an unpaired surrogate,
 * which UTF-8 cannot encode (Java writes {@code ?} for it, so {@code "k\uD800"},
 * {@code "k\uDC00"} and {@code "k?"} would be one key); that one is digested from its
 * UTF-16 code units.
 */
public final class StoredKey {

	/**
	 * Maximum length, in characters, of a key or scope stored as it is.
	 */
	public static final int MAX_LENGTH = 255;

	private static final String DIGEST_PREFIX = "sha256:";

	private StoredKey() {
	}

	/**
	 * Return the value as it is stored: unchanged when it fits, else its digest.
	 * @param value a key or scope
	 * @return the stored form
	 */
	public static String of(String value) {
		boolean wellFormed = isWellFormed(value);
		if (wellFormed && value.length() <= MAX_LENGTH && value.indexOf('\0') < 0) {
			return value;
		}
		return digest(wellFormed ? value.getBytes(StandardCharsets.UTF_8) : codeUnits(value));
	}

	private static boolean isWellFormed(String value) {
		for (int i = 0; i < value.length(); i++) {
			char c = value.charAt(i);
			if (Character.isHighSurrogate(c) && i + 1 < value.length()
					&& Character.isLowSurrogate(value.charAt(i + 1))) {
				i++;
			}
			else if (Character.isSurrogate(c)) {
				return false;
			}
		}
		return true;
	}

	// the UTF-16 code units, after a byte that no UTF-8 text contains, so that the digest
	// cannot be that of a well-formed value
	private static byte[] codeUnits(String value) {
		ByteBuffer bytes = ByteBuffer.allocate(1 + 2 * value.length());
		bytes.put((byte) 0xFF);
		for (int i = 0; i < value.length(); i++) {
			bytes.putChar(value.charAt(i));
		}
		return bytes.array();
	}

	static String digest(byte[] bytes) {
		try {
			MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
			return DIGEST_PREFIX + HexFormat.of().formatHex(sha256.digest(bytes));
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException("SHA-256 is required of every Java platform", ex);
		}
	}

}
