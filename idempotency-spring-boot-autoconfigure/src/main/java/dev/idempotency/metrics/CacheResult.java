package dev.idempotency.metrics;

import java.util.Locale;

/**
 * The result of one cache lookup; the {@code result} tag.
 */
public enum CacheResult {

	/** The cache knew the key as processed. */
	HIT,

	/** The cache did not know the key. */
	MISS,

	/** The cache gave no answer: failure, timeout, or breaker open. */
	ERROR;

	private final String tag = name().toLowerCase(Locale.ROOT);

	/**
	 * Return the tag value.
	 * @return the lowercase name
	 */
	public String tag() {
		return this.tag;
	}

}
