package dev.idempotency.internal.key;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Fits keys and scopes into the store's columns: a value longer than the column is
 * replaced by {@code sha256:} and the hex SHA-256 digest of its UTF-8 bytes, never
 * truncated (truncation would make distinct keys collide).
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
		if (value.length() <= MAX_LENGTH && value.indexOf('\0') < 0) {
			return value;
		}
		return digest(value.getBytes(StandardCharsets.UTF_8));
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
