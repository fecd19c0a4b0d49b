package dev.idempotency.internal.consumer;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

import org.springframework.kafka.KafkaException;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.ListenerUtils;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.TopicPartitionOffset;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.BackOffExecution;

/**
 * A container's error handler that retries records failed by the infrastructure (see
 * {@link InfrastructureFailures}) with a back-off and never gives them up, and hands
 * every other failure to the application's error handler, whose retries, recoverer and
 * dead-letter topic stay as configured.
 */
public final class InfrastructureRetryingErrorHandler implements CommonErrorHandler {

	private final CommonErrorHandler application;

	private final DefaultErrorHandler infrastructure;

	private final BackOff backOff;

	private final ThreadLocal<BatchRetry> batchRetry = new ThreadLocal<>();

	private final ThreadLocal<Throwable> delayed = new ThreadLocal<>();

	/**
	 * Wrap the application's error handler.
	 * @param application the error handler of the container
	 * @param backOff the back-off between attempts after an infrastructure failure; it
	 * should never stop
	 */
	public InfrastructureRetryingErrorHandler(CommonErrorHandler application, BackOff backOff) {
		this.application = application;
		this.backOff = backOff;
		this.infrastructure = new DefaultErrorHandler((record, ex) -> {
			throw new IllegalStateException("A record failed by the infrastructure is retried, never recovered", ex);
		}, backOff);
		this.infrastructure.setSeekAfterError(application.seeksAfterHandling());
		this.infrastructure.setAckAfterHandle(application.isAckAfterHandle());
		this.infrastructure.setLogLevel(KafkaException.Level.WARN);
	}

	private CommonErrorHandler handlerFor(Exception thrownException) {
		if (InfrastructureFailures.isInfrastructureFailure(thrownException)) {
			this.delayed.set(thrownException);
			return this.infrastructure;
		}
		return this.application;
	}

	/**
	 * Return whether this handler waited out the back-off for the failure, or for one of
	 * its causes, last on this thread: in a transactional container, the after-rollback
	 * processor then sees the failure again and need not wait a second time.
	 * @param failure the failure the transaction rolled back for
	 * @return {@code true} if the back-off was waited out
	 */
	boolean delayed(Throwable failure) {
		Throwable last = this.delayed.get();
		for (Throwable cause = failure; cause != null && last != null; cause = cause.getCause()) {
			if (cause == last) {
				this.delayed.remove();
				return true;
			}
			if (cause.getCause() == cause) {
				break;
			}
		}
		return false;
	}

	@Override
	public boolean handleOne(Exception thrownException, ConsumerRecord<?, ?> record, Consumer<?, ?> consumer,
			MessageListenerContainer container) {
		return handlerFor(thrownException).handleOne(thrownException, record, consumer, container);
	}

	@Override
	public void handleRemaining(Exception thrownException, List<ConsumerRecord<?, ?>> records,
			Consumer<?, ?> consumer, MessageListenerContainer container) {
		handlerFor(thrownException).handleRemaining(thrownException, records, consumer, container);
	}

	@Override
	public void handleBatch(Exception thrownException, ConsumerRecords<?, ?> data, Consumer<?, ?> consumer,
			MessageListenerContainer container, Runnable invokeListener) {
		if (InfrastructureFailures.isInfrastructureFailure(thrownException)) {
			throw redeliverLater(thrownException, data, consumer, container);
		}
		try {
			this.application.handleBatch(thrownException, data, consumer, container, stoppingAtOutage(invokeListener));
		}
		catch (OutageDuringRetry outage) {
			throw redeliverLater(outage.failure, data, consumer, container);
		}
	}

	@Override
	public <K, V> ConsumerRecords<K, V> handleBatchAndReturnRemaining(Exception thrownException,
			ConsumerRecords<?, ?> data, Consumer<?, ?> consumer, MessageListenerContainer container,
			Runnable invokeListener) {
		if (InfrastructureFailures.isInfrastructureFailure(thrownException)) {
			throw redeliverLater(thrownException, data, consumer, container);
		}
		try {
			return this.application.handleBatchAndReturnRemaining(thrownException, data, consumer, container,
					stoppingAtOutage(invokeListener));
		}
		catch (OutageDuringRetry outage) {
			throw redeliverLater(outage.failure, data, consumer, container);
		}
	}

	/**
	 * Wrap the listener call the application's handler retries a whole batch with (in a
	 * loop of its own, as spring-kafka's {@code FallbackBatchErrorHandler} does): a
	 * failure of the infrastructure on one of those calls leaves the handler's loop at
	 * once, so that it counts none of the application's attempts and never reaches its
	 * recoverer; the batch is then delivered again after the infrastructure back-off. An
	 * {@link Error} is the one thing such a loop does not catch; it never leaves this
	 * class.
	 */
	private Runnable stoppingAtOutage(Runnable invokeListener) {
		return () -> {
			try {
				invokeListener.run();
			}
			catch (RuntimeException ex) {
				if (InfrastructureFailures.isInfrastructureFailure(ex)) {
					throw new OutageDuringRetry(ex);
				}
				throw ex;
			}
		};
	}

	/**
	 * Send a batch failed by the infrastructure back to the container whole: seek each of
	 * its partitions back to its first record and wait out the back-off; the caller throws
	 * the returned exception, so that nothing of it is committed and the next poll
	 * delivers it again. Each attempt comes
	 * back here, so that a failure of another kind then reaches the application's handler,
	 * and the application's retries never count an outage.
	 */
	private KafkaException redeliverLater(Exception thrownException, ConsumerRecords<?, ?> data,
			Consumer<?, ?> consumer, MessageListenerContainer container) {
		this.delayed.set(thrownException);
		Map<TopicPartition, Long> firsts = new LinkedHashMap<>();
		for (TopicPartition partition : data.partitions()) {
			List<? extends ConsumerRecord<?, ?>> records = data.records(partition);
			if (!records.isEmpty()) {
				firsts.put(partition, records.get(0).offset());
			}
		}
		seekBack(consumer, firsts);
		ConsumerRecord<?, ?> first = data.iterator().next();
		TopicPartitionOffset batch = new TopicPartitionOffset(first.topic(), first.partition(), first.offset());
		BatchRetry retry = this.batchRetry.get();
		if (retry == null || !retry.batch().equals(batch)) {
			retry = new BatchRetry(batch, this.backOff.start());
			this.batchRetry.set(retry);
		}
		long delay = retry.execution().nextBackOff();
		try {
			ListenerUtils.stoppableSleep(container, Math.max(0, delay));
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		return new KafkaException("Batch failed by the infrastructure (" + thrownException
				+ "); it will be delivered again", KafkaException.Level.WARN, thrownException);
	}

	/**
	 * Seek each partition back to its first unprocessed record. A partition the consumer
	 * lost in a rebalance since the poll (the application's retry loop polls) is left to
	 * its new owner, which starts from its committed offset; the others are still sought.
	 * @param consumer the consumer
	 * @param firsts the offset of the first unprocessed record of each partition
	 */
	static void seekBack(Consumer<?, ?> consumer, Map<TopicPartition, Long> firsts) {
		Set<TopicPartition> assigned = consumer.assignment();
		firsts.forEach((partition, offset) -> {
			if (assigned.contains(partition)) {
				consumer.seek(partition, offset);
			}
		});
	}

	@Override
	public void handleOtherException(Exception thrownException, Consumer<?, ?> consumer,
			MessageListenerContainer container, boolean batchListener) {
		this.application.handleOtherException(thrownException, consumer, container, batchListener);
	}

	@Override
	public boolean seeksAfterHandling() {
		return this.application.seeksAfterHandling();
	}

	@Override
	public boolean deliveryAttemptHeader() {
		return this.application.deliveryAttemptHeader();
	}

	@Override
	public int deliveryAttempt(TopicPartitionOffset topicPartitionOffset) {
		return this.application.deliveryAttempt(topicPartitionOffset);
	}

	private record BatchRetry(TopicPartitionOffset batch, BackOffExecution execution) {
	}

	/**
	 * Carries an infrastructure failure out of the application handler's own retry loop,
	 * which catches every {@link Exception} and counts it as an attempt.
	 */
	private static final class OutageDuringRetry extends Error {

		private static final long serialVersionUID = 1L;

		private final transient RuntimeException failure;

		OutageDuringRetry(RuntimeException failure) {
			super(failure.toString(), failure, false, false);
			this.failure = failure;
		}

	}

	@Override
	public void clearThreadState() {
		this.batchRetry.remove();
		this.delayed.remove();
		IdempotentFailures.forget();
		this.infrastructure.clearThreadState();
		this.application.clearThreadState();
	}

	@Override
	public boolean isAckAfterHandle() {
		return this.application.isAckAfterHandle();
	}

	@Override
	public void setAckAfterHandle(boolean ack) {
		this.application.setAckAfterHandle(ack);
		this.infrastructure.setAckAfterHandle(ack);
	}

	@Override
	public void onPartitionsAssigned(Consumer<?, ?> consumer, Collection<TopicPartition> partitions,
			Runnable publishPause) {
		this.infrastructure.onPartitionsAssigned(consumer, partitions, publishPause);
		this.application.onPartitionsAssigned(consumer, partitions, publishPause);
	}

}
