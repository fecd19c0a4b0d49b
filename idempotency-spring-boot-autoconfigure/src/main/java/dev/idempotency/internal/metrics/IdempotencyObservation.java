package dev.idempotency.internal.metrics;

import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.docs.ObservationDocumentation;

/**
 * The observations this library makes, with their key values. Key values are
 * low-cardinality: never a key, an offset or a payload value. With a tracing bridge,
 * each observation is a span, child of the current one (the listener container's when
 * {@code spring.kafka.listener.observation-enabled} is set).
 */
public enum IdempotencyObservation implements ObservationDocumentation {

	/**
	 * One invocation of an {@code @Idempotent} listener, for a record or a batch: the cache
	 * lookup, the claim, the listener's work and its commit. An exception the invocation
	 * throws is the observation's error.
	 */
	LISTENER {

		@Override
		public String getName() {
			return "idempotency.listener";
		}

		@Override
		public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention() {
			return DefaultIdempotencyObservationConvention.class;
		}

		@Override
		public KeyName[] getLowCardinalityKeyNames() {
			return ListenerKeyNames.values();
		}

	};

	/**
	 * Low-cardinality key values of {@link #LISTENER}.
	 */
	public enum ListenerKeyNames implements KeyName {

		/**
		 * The listener, as in the {@code listener} tag of the meters.
		 */
		LISTENER {
			@Override
			public String asString() {
				return "listener";
			}
		},

		/**
		 * The decision: {@code processed}, {@code duplicate}, {@code failed},
		 * {@code rejected}; {@code none} when the listener nacked the record. For a batch,
		 * the most consequential decision among its records: {@code failed}, then
		 * {@code processed}, then {@code rejected}, then {@code duplicate}.
		 */
		OUTCOME {
			@Override
			public String asString() {
				return "outcome";
			}
		},

		/**
		 * Where the decision came from: {@code cache}, {@code store}, {@code none}.
		 */
		SOURCE {
			@Override
			public String asString() {
				return "source";
			}
		},

		/**
		 * Whether the listener receives batches: {@code true} or {@code false}.
		 */
		BATCH {
			@Override
			public String asString() {
				return "batch";
			}
		}

	}

}
