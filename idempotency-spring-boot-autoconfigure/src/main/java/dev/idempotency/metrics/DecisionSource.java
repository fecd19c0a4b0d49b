package dev.idempotency.metrics;

import java.util.Locale;

/**
 * Where a decision came from; the {@code source} tag.
 */
public enum DecisionSource {

	/** The cache in front of the store answered. */
	CACHE,

	/** The store answered. */
	STORE,

	/** No store was asked (for example, the record had no key). */
	NONE;

	private final String tag = name().toLowerCase(Locale.ROOT);

	/**
	 * Return the tag value.
	 * @return the lowercase name
	 */
	public String tag() {
		return this.tag;
	}

}
