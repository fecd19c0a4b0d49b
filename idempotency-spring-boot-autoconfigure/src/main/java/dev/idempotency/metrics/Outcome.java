package dev.idempotency.metrics;

import java.util.Locale;

/**
 * The decision taken for one message; the {@code outcome} tag.
 */
public enum Outcome {

	/** The key was new and the listener's work committed. */
	PROCESSED,

	/** The key had been processed; the listener was not invoked. */
	DUPLICATE,

	/** The claim or the listener failed; nothing was committed. */
	FAILED,

	/** The record had no key and the policy rejected or skipped it. */
	REJECTED;

	private final String tag = name().toLowerCase(Locale.ROOT);

	/**
	 * Return the tag value.
	 * @return the lowercase name
	 */
	public String tag() {
		return this.tag;
	}

}
