package dev.idempotency.metrics;

/**
 * The meters this library records, with their tags. Tags are low-cardinality: never a
 * key, an offset or a payload value.
 */
public enum IdempotencyMeters {

	/**
	 * Counter of messages seen by {@code @Idempotent} listeners, by decision. Tags:
	 * {@code listener}; {@code outcome} = {@code processed}, {@code duplicate},
	 * {@code failed}, {@code rejected} (no key, policy {@code reject} or {@code skip});
	 * {@code source} = {@code cache}, {@code store}, {@code none} (where the decision came
	 * from).
	 */
	MESSAGES("idempotency.messages"),

	/**
	 * Timer of the claim of a key in the store (the statement, without the listener's
	 * work). Tags: {@code listener}, {@code store}.
	 */
	CLAIM("idempotency.claim");

	private final String meterName;

	IdempotencyMeters(String meterName) {
		this.meterName = meterName;
	}

	/**
	 * Return the Micrometer name of the meter.
	 * @return the name
	 */
	public String meterName() {
		return this.meterName;
	}

}
