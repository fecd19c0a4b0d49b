package dev.idempotency.internal.consumer;

import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.store.ProcessedMessage;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * What an {@code @Idempotent} method does with each record or batch, worked out once from
 * its annotation, its signature and the application's store, cache and settings (see
 * {@link ListenerPlanner}). A record goes through the same steps for every listener: its
 * key, the lookup before the claim, then the claim and the invocation; only the steps
 * differ from plan to plan, and no annotation attribute is read on the way.
 *
 * @param method the listener method
 * @param metrics its meters
 * @param keys resolves each record's key
 * @param lookup the hint asked before the claim
 * @param claim claims the key and invokes the method
 * @param batch runs a batch delivery
 * @param skipsBeforeInvocation whether a record the lookup finds processed may be skipped
 * before the listener is invoked (see {@link KnownDuplicates}): the lookup is a key lookup
 * and the key depends on the record alone, not on the payload's conversion
 */
record ListenerPlan(ListenerMethod method, ListenerMetrics metrics, RecordKeys keys, RecordLookup lookup,
		RecordClaim claim, BatchStep batch, boolean skipsBeforeInvocation) {

	private static final @Nullable Object[] NO_ARGUMENTS = {};

	/**
	 * Run one invocation of the listener through the plan.
	 * @param invocation the invocation
	 * @param metrics the meters of this invocation
	 * @return what the method returned, or what a skipped record returns
	 * @throws Throwable the method's failure, or a rejection, for the error handler
	 */
	@Nullable Object invoke(MethodInvocation invocation, ListenerMetrics metrics) throws Throwable {
		if (this.method.isBatchInvocation()) {
			return this.batch.invoke(invocation, this.method, metrics);
		}
		@Nullable Object[] arguments = invocation.getArguments();
		ConsumerRecord<?, ?> record = currentRecord(arguments);
		ProcessedMessage message = this.keys.message(this.method, metrics, record, arguments);
		if (message == null) {
			return null;
		}
		RecordInvocation current = new RecordInvocation(this.method, metrics, record, message, arguments);
		DecisionSource known = this.lookup.processed(current);
		if (known != null) {
			return RecordDecisions.duplicate(current, known);
		}
		return this.claim.claimAndProceed(invocation, current);
	}

	/**
	 * Return where the record's key was found processed, before the listener is invoked,
	 * or {@code null} when the record must go to the listener: its key is not known
	 * processed, it has none, or this plan does not skip before invocation.
	 * @param record the record the container is about to deliver
	 * @return where the key was found processed, or {@code null}
	 */
	@Nullable DecisionSource knownDuplicate(ConsumerRecord<?, ?> record) {
		if (!this.skipsBeforeInvocation) {
			return null;
		}
		ProcessedMessage message = this.keys.beforeInvocation(this.method, record);
		if (message == null) {
			return null;
		}
		return this.lookup.processed(new RecordInvocation(this.method, this.metrics, record, message, NO_ARGUMENTS));
	}

	private ConsumerRecord<?, ?> currentRecord(@Nullable Object[] arguments) {
		for (Object argument : arguments) {
			if (argument instanceof ConsumerRecord<?, ?> record) {
				return record;
			}
		}
		ConsumerRecord<?, ?> record = CurrentRecord.get();
		if (record == null) {
			throw new IllegalStateException("No Kafka record is bound to the thread invoking @Idempotent method "
					+ this.method.name() + "; it must be invoked by a listener container created by a Spring "
					+ "KafkaListenerContainerFactory bean, or take the ConsumerRecord as a parameter");
		}
		return record;
	}

	/**
	 * How the plan runs a batch delivery.
	 */
	@FunctionalInterface
	interface BatchStep {

		@Nullable Object invoke(MethodInvocation invocation, ListenerMethod method, ListenerMetrics metrics)
				throws Throwable;

	}

}
