package dev.idempotency.internal.metrics;

import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.Outcome;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

/**
 * The context of one {@link IdempotencyObservation#LISTENER} observation: the listener
 * and the decision taken for the record or the batch it was invoked with.
 */
public final class IdempotencyObservationContext extends Observation.Context {

	private final String listener;

	private final boolean batch;

	private @Nullable Outcome outcome;

	private DecisionSource source = DecisionSource.NONE;

	/**
	 * Create a context.
	 * @param listener the listener's name, as in the {@code listener} tag of the meters
	 * @param batch whether the listener receives batches
	 */
	public IdempotencyObservationContext(String listener, boolean batch) {
		this.listener = listener;
		this.batch = batch;
	}

	/**
	 * Note decisions taken during the invocation. A batch holds several: the observation
	 * keeps the most consequential one, {@code failed} over {@code processed} over
	 * {@code rejected} over {@code duplicate}.
	 * @param outcome the decision
	 * @param source where it came from
	 * @param count how many messages took it; nothing is noted when zero
	 */
	public void decided(Outcome outcome, DecisionSource source, int count) {
		if (count > 0 && rank(outcome) > rank(this.outcome)) {
			this.outcome = outcome;
			this.source = source;
		}
	}

	/**
	 * Return the listener's name.
	 * @return the name
	 */
	public String getListener() {
		return this.listener;
	}

	/**
	 * Return whether the listener receives batches.
	 * @return whether it is a batch listener
	 */
	public boolean isBatch() {
		return this.batch;
	}

	/**
	 * Return the {@code outcome} key value: the decision, or {@code none} when none was
	 * taken (the listener nacked the record, or the invocation is still running).
	 * @return the key value
	 */
	public String outcomeValue() {
		Outcome outcome = this.outcome;
		return (outcome != null) ? outcome.tag() : "none";
	}

	/**
	 * Return the {@code source} key value.
	 * @return the key value
	 */
	public String sourceValue() {
		return this.source.tag();
	}

	private static int rank(@Nullable Outcome outcome) {
		if (outcome == null) {
			return 0;
		}
		return switch (outcome) {
			case FAILED -> 4;
			case PROCESSED -> 3;
			case REJECTED -> 2;
			case DUPLICATE -> 1;
		};
	}

}
