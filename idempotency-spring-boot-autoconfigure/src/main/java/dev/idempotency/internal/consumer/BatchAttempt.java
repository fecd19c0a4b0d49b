package dev.idempotency.internal.consumer;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntUnaryOperator;

import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.kafka.listener.BatchListenerFailedException;

/**
 * One attempt at a batch: its claims, the records kept for the listener, and the
 * acknowledgment the listener was given.
 */
final class BatchAttempt {

	final ProxyMethodInvocation invocation;

	final ListenerMethod method;

	final Object batch;

	final List<ConsumerRecord<?, ?>> records;

	final @Nullable List<?> payloads;

	final List<Integer> candidates;

	final ProcessedMessage[] messages;

	final List<Claim> claims = new ArrayList<>();

	/** Indexes in the delivered batch of the records the listener receives. */
	final List<Integer> kept = new ArrayList<>();

	final IntUnaryOperator containerIndexes;

	final int firstRejected;

	@Nullable DeferredAcknowledgment acknowledgment;

	BatchAttempt(ProxyMethodInvocation invocation, ListenerMethod method, Object batch,
			List<ConsumerRecord<?, ?>> records, @Nullable List<?> payloads, List<Integer> candidates,
			ProcessedMessage[] messages, IntUnaryOperator containerIndexes, int firstRejected) {
		this.containerIndexes = containerIndexes;
		this.firstRejected = firstRejected;
		this.invocation = invocation;
		this.method = method;
		this.batch = batch;
		this.records = records;
		this.payloads = payloads;
		this.candidates = candidates;
		this.messages = messages;
	}

	@Nullable Object proceedWithNew() {
		for (int i = 0; i < this.candidates.size(); i++) {
			if (this.claims.get(i).isNew()) {
				this.kept.add(this.candidates.get(i));
			}
		}
		if (this.kept.isEmpty()) {
			return BatchInvoker.NOTHING_NEW;
		}
		@Nullable Object[] arguments = this.invocation.getArguments().clone();
		if (this.kept.size() < this.records.size()) {
			arguments[this.method.batchIndex()] = BatchShapes.filtered(this.method, this.batch, this.records, this.payloads,
					this.kept);
		}
		this.acknowledgment = DeferredAcknowledgment.replace(this.method, arguments,
				(index) -> this.containerIndexes.applyAsInt(position(index)));
		this.invocation.setArguments(arguments);
		return ListenerInvocations.proceed(this.invocation);
	}

	/** The position in the records of the record at an index of the list the listener received. */
	int position(int index) {
		if (index < 0 || index >= this.kept.size()) {
			throw new IndexOutOfBoundsException("Index " + index + " is outside the batch of " + this.kept.size()
					+ " records the listener received");
		}
		return this.kept.get(index);
	}

	/**
	 * Return the position in the records of the record a
	 * {@link BatchListenerFailedException} names, or -1.
	 */
	int positionOf(BatchListenerFailedException ex) {
		ConsumerRecord<?, ?> named = ex.getRecord();
		if (named == null) {
			return (ex.getIndex() >= 0 && ex.getIndex() < this.kept.size()) ? this.kept.get(ex.getIndex()) : -1;
		}
		for (int i = 0; i < this.records.size(); i++) {
			ConsumerRecord<?, ?> record = this.records.get(i);
			if (record.topic().equals(named.topic()) && record.partition() == named.partition()
					&& record.offset() == named.offset()) {
				return i;
			}
		}
		return -1;
	}

	/** Whether a record before this one was to be claimed (for a claim that failed). */
	boolean candidateBefore(int delivered) {
		return !this.candidates.isEmpty() && this.candidates.get(0) < delivered;
	}

	/** The record of a message of the batch, or {@code null} if the batch has none. */
	@Nullable ConsumerRecord<?, ?> recordOf(ProcessedMessage message) {
		for (int i = 0; i < this.messages.length; i++) {
			if (message.equals(this.messages[i])) {
				return this.records.get(i);
			}
		}
		return null;
	}

	boolean keptBefore(int delivered) {
		return !this.kept.isEmpty() && this.kept.get(0) < delivered;
	}

	boolean isNacked() {
		return this.acknowledgment != null && this.acknowledgment.isNacked();
	}

	/** The messages a batch nack handed back: the kept ones from the nacked index on. */
	List<ProcessedMessage> handedBack() {
		List<ProcessedMessage> handedBack = new ArrayList<>();
		for (int i = Math.max(0, this.acknowledgment.nackIndex()); i < this.kept.size(); i++) {
			handedBack.add(this.messages[this.kept.get(i)]);
		}
		return handedBack;
	}

	/**
	 * The new claims of the records before a delivered position, taken out of the claims
	 * a failure releases.
	 */
	List<Claim> claimsBefore(int delivered) {
		List<Claim> before = new ArrayList<>();
		for (int i = 0; i < this.claims.size() && this.candidates.get(i) < delivered; i++) {
			if (this.claims.get(i).isNew()) {
				before.add(this.claims.set(i, Claim.DUPLICATE));
			}
		}
		return before;
	}

	/** The claims a batch nack handed back, removed from the claims to complete. */
	List<Claim> handedBackClaims() {
		List<Claim> handedBack = new ArrayList<>();
		int from = Math.max(0, this.acknowledgment.nackIndex());
		for (int i = 0, keptIndex = 0; i < this.candidates.size(); i++) {
			if (this.claims.get(i).isNew()) {
				if (keptIndex >= from) {
					handedBack.add(this.claims.set(i, Claim.DUPLICATE));
				}
				keptIndex++;
			}
		}
		return handedBack;
	}

}
