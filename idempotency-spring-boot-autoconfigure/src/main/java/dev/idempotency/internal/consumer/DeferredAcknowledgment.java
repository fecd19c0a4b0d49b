package dev.idempotency.internal.consumer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntUnaryOperator;

import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.kafka.support.Acknowledgment;

/**
 * The {@link Acknowledgment} an {@code @Idempotent} listener receives in place of the
 * container's. It holds the listener's calls back until its transaction has committed,
 * so that an offset is never committed (as {@code MANUAL_IMMEDIATE} would) before the
 * effects of its record; it remembers a {@code nack}, so that the interceptor can give up
 * the claims of the records handed back; and it translates the indexes of a batch from
 * the filtered batch the listener saw to the batch the container delivered.
 */
final class DeferredAcknowledgment implements Acknowledgment {

	private final Acknowledgment delegate;

	private final @Nullable IntUnaryOperator deliveredIndex;

	private final List<Call> calls = new ArrayList<>(1);

	private boolean released;

	private boolean nacked;

	private int nackIndex = -1;

	private @Nullable Duration nackSleep;

	private DeferredAcknowledgment(Acknowledgment delegate, @Nullable IntUnaryOperator deliveredIndex) {
		this.delegate = delegate;
		this.deliveredIndex = deliveredIndex;
	}

	/**
	 * Wrap the container's acknowledgment of a record.
	 * @param delegate the container's acknowledgment
	 * @return the deferred acknowledgment
	 */
	static DeferredAcknowledgment ofRecord(Acknowledgment delegate) {
		return new DeferredAcknowledgment(delegate, null);
	}

	/**
	 * Wrap the container's acknowledgment of a batch.
	 * @param delegate the container's acknowledgment
	 * @param deliveredIndex maps an index of the batch the listener sees to the batch the
	 * container delivered (the identity for a batch seen whole)
	 * @return the deferred acknowledgment
	 */
	static DeferredAcknowledgment ofBatch(Acknowledgment delegate, IntUnaryOperator deliveredIndex) {
		return new DeferredAcknowledgment(delegate, deliveredIndex);
	}

	@Override
	public synchronized void acknowledge() {
		if (this.released) {
			this.delegate.acknowledge();
		}
		else {
			this.calls.add(new Call(Integer.MAX_VALUE, this.delegate::acknowledge));
		}
	}

	@Override
	public synchronized void acknowledge(int index) {
		int delivered = deliveredIndex(index, "acknowledge(index)");
		if (this.released) {
			this.delegate.acknowledge(delivered);
		}
		else {
			this.calls.add(new Call(index, () -> this.delegate.acknowledge(delivered)));
		}
	}

	// As the container's acknowledgments do, a batch refuses nack(sleep) and a record the
	// calls with an index, at once: the listener fails and its transaction rolls back. A
	// call that failed only once passed on, after the commit, would have committed the
	// work with its claims given up, and the retry would apply it again.
	@Override
	public synchronized void nack(Duration sleep) {
		if (this.deliveredIndex != null) {
			throw new UnsupportedOperationException(
					"nack(Duration) is not supported by the acknowledgment of a batch: use nack(index, Duration)");
		}
		if (this.released) {
			this.delegate.nack(sleep);
			return;
		}
		this.nacked = true;
		this.nackSleep = sleep;
	}

	@Override
	public synchronized void nack(int index, Duration sleep) {
		int delivered = deliveredIndex(index, "nack(index, Duration)"); // fails now for an index out of the batch
		if (this.released) {
			this.delegate.nack(delivered, sleep);
			return;
		}
		this.nacked = true;
		this.nackIndex = index;
		this.nackSleep = sleep;
	}

	private int deliveredIndex(int index, String call) {
		if (this.deliveredIndex == null) {
			throw new UnsupportedOperationException(
					call + " is not supported by the acknowledgment of a record: it is for batch listeners");
		}
		return this.deliveredIndex.applyAsInt(index);
	}

	@Override
	public boolean isOutOfOrderCommit() {
		return this.delegate.isOutOfOrderCommit();
	}

	/**
	 * Return whether the listener called a {@code nack}.
	 * @return {@code true} after a nack
	 */
	synchronized boolean isNacked() {
		return this.nacked;
	}

	/**
	 * Return the index, in the batch the listener saw, from which a batch nack hands the
	 * records back; -1 for a nack of a record, or when there was none.
	 * @return the index
	 */
	synchronized int nackIndex() {
		return this.nackIndex;
	}

	/**
	 * Hand the whole batch back rather than the records from the nacked one on, because
	 * their claims could not be given up alone and the whole batch rolled back.
	 */
	synchronized void nackAll() {
		this.nackIndex = 0;
	}

	/**
	 * Pass the listener's calls on to the container, once its transaction committed (or
	 * rolled back after a nack), and every later call at once. Acknowledgments of records
	 * that a nack handed back are dropped: their offsets must not be committed.
	 */
	synchronized void release() {
		this.released = true;
		for (Call call : this.calls) {
			if (!this.nacked || (this.nackIndex >= 0 && call.index() < this.nackIndex)) {
				call.action().run();
			}
		}
		this.calls.clear();
		if (this.nacked && this.nackSleep != null) {
			if (this.nackIndex >= 0) {
				this.delegate.nack(deliveredIndex(this.nackIndex, "nack(index, Duration)"), this.nackSleep);
			}
			else {
				this.delegate.nack(this.nackSleep);
			}
		}
	}

	/**
	 * Forget the listener's calls: its records are handed to the error handler.
	 */
	synchronized void discard() {
		this.calls.clear();
		this.nacked = false;
	}

	private record Call(int index, Runnable action) {
	}

	/**
	 * Put a deferred acknowledgment in place of the container's among the arguments,
	 * including the acknowledgment header of a message or headers argument.
	 * @param method the listener method
	 * @param arguments the arguments, changed in place
	 * @param deliveredIndex for a batch listener, maps indexes of the batch the listener
	 * sees to the delivered one; {@code null} for a record listener
	 * @return the deferred acknowledgment, or {@code null} when the method takes none
	 */
	static @Nullable DeferredAcknowledgment replace(ListenerMethod method, @Nullable Object[] arguments,
			@Nullable IntUnaryOperator deliveredIndex) {
		Acknowledgment acknowledgment = method.acknowledgments().find(arguments);
		if (acknowledgment == null) {
			return null;
		}
		DeferredAcknowledgment deferred = (deliveredIndex != null) ? ofBatch(acknowledgment, deliveredIndex)
				: ofRecord(acknowledgment);
		method.acknowledgments().replace(arguments, deferred);
		return deferred;
	}

	/**
	 * Give a record listener an acknowledgment that passes its calls on after the
	 * transaction.
	 * @param invocation the invocation, whose arguments are replaced
	 * @param method the listener method
	 * @return the deferred acknowledgment, or {@code null} when the method takes none
	 */
	static @Nullable DeferredAcknowledgment defer(MethodInvocation invocation, ListenerMethod method) {
		if (!method.acknowledgments().any()) {
			return null;
		}
		@Nullable Object[] arguments = invocation.getArguments().clone();
		DeferredAcknowledgment deferred = replace(method, arguments, null);
		if (deferred != null) {
			((ProxyMethodInvocation) invocation).setArguments(arguments);
		}
		return deferred;
	}

}
