package dev.idempotency.internal.metrics;

import dev.idempotency.internal.metrics.IdempotencyObservation.ListenerKeyNames;
import io.micrometer.common.KeyValues;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * The default names and key values of {@link IdempotencyObservation#LISTENER}.
 */
public final class DefaultIdempotencyObservationConvention
		implements ObservationConvention<IdempotencyObservationContext> {

	/**
	 * The shared instance.
	 */
	public static final DefaultIdempotencyObservationConvention INSTANCE = new DefaultIdempotencyObservationConvention();

	@Override
	public String getName() {
		return IdempotencyObservation.LISTENER.getName();
	}

	@Override
	public String getContextualName(IdempotencyObservationContext context) {
		return "idempotent " + context.getListener();
	}

	@Override
	public KeyValues getLowCardinalityKeyValues(IdempotencyObservationContext context) {
		return KeyValues.of(ListenerKeyNames.LISTENER.withValue(context.getListener()),
				ListenerKeyNames.OUTCOME.withValue(context.outcomeValue()),
				ListenerKeyNames.SOURCE.withValue(context.sourceValue()),
				ListenerKeyNames.BATCH.withValue(Boolean.toString(context.isBatch())));
	}

	@Override
	public boolean supportsContext(Observation.Context context) {
		return context instanceof IdempotencyObservationContext;
	}

}
