package dev.idempotency.internal.consumer;

import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.internal.metrics.IdempotencyObservationContext;
import dev.idempotency.metrics.Outcome;

/**
 * Passes the decisions of one invocation to the listener's meters and notes them on the
 * invocation's observation, so that both always agree.
 */
final class ObservedListenerMetrics implements ListenerMetrics {

	private final ListenerMetrics meters;

	private final IdempotencyObservationContext observation;

	ObservedListenerMetrics(ListenerMetrics meters, IdempotencyObservationContext observation) {
		this.meters = meters;
		this.observation = observation;
	}

	@Override
	public void messages(Outcome outcome, DecisionSource source, int count) {
		this.meters.messages(outcome, source, count);
		this.observation.decided(outcome, source, count);
	}

	@Override
	public void claim(long nanos) {
		this.meters.claim(nanos);
	}

}
