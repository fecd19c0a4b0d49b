package dev.idempotency.internal.consumer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.kafka.listener.AfterRollbackProcessor;
import org.springframework.kafka.listener.ContainerProperties.EOSMode;
import org.springframework.kafka.listener.DeliveryAttemptAware;
import org.springframework.kafka.listener.ListenerUtils;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.TopicPartitionOffset;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.BackOffExecution;

/**
 * A container's after-rollback processor, used instead of its error handler's recovery
 * when the container runs its listener in a transaction, that delivers records failed by
 * the infrastructure (see {@link InfrastructureFailures}) again after a back-off and
 * never gives them up, and hands every other failure to the application's processor,
 * whose attempts, recoverer and offset commit stay as configured. The back-off is not
 * waited twice: a failure the {@link InfrastructureRetryingErrorHandler} already waited
 * out before the rollback is only delivered again.
 */
class InfrastructureRetryingAfterRollbackProcessor implements AfterRollbackProcessor<Object, Object> {

	private static final Log logger = LogFactory.getLog(InfrastructureRetryingAfterRollbackProcessor.class);

	private final AfterRollbackProcessor<Object, Object> application;

	private final InfrastructureRetryingErrorHandler errorHandler;

	private final BackOff backOff;

	private final ThreadLocal<Retry> retry = new ThreadLocal<>();

	InfrastructureRetryingAfterRollbackProcessor(AfterRollbackProcessor<Object, Object> application,
			InfrastructureRetryingErrorHandler errorHandler, BackOff backOff) {
		this.application = application;
		this.errorHandler = errorHandler;
		this.backOff = backOff;
	}

	/**
	 * Wrap the application's processor, keeping what the container reads of it.
	 * @param application the container's after-rollback processor
	 * @param errorHandler the container's error handler, which waits out the failures of
	 * the listener itself
	 * @param backOff the back-off between attempts after an infrastructure failure
	 * @return the wrapper
	 */
	@SuppressWarnings("unchecked")
	static InfrastructureRetryingAfterRollbackProcessor of(AfterRollbackProcessor<?, ?> application,
			InfrastructureRetryingErrorHandler errorHandler, BackOff backOff) {
		AfterRollbackProcessor<Object, Object> processor = (AfterRollbackProcessor<Object, Object>) application;
		return (application instanceof DeliveryAttemptAware)
				? new Aware(processor, errorHandler, backOff)
				: new InfrastructureRetryingAfterRollbackProcessor(processor, errorHandler, backOff);
	}

	AfterRollbackProcessor<Object, Object> application() {
		return this.application;
	}

	@Override
	public void process(List<ConsumerRecord<Object, Object>> records, Consumer<Object, Object> consumer,
			MessageListenerContainer container, Exception exception, boolean recoverable, EOSMode eosMode) {
		if (InfrastructureFailures.isInfrastructureFailure(exception) && !records.isEmpty()) {
			redeliverLater(records, consumer, container, exception);
		}
		else {
			this.application.process(records, consumer, container, exception, recoverable, eosMode);
		}
	}

	@Override
	public void processBatch(ConsumerRecords<Object, Object> records, List<ConsumerRecord<Object, Object>> recordList,
			Consumer<Object, Object> consumer, MessageListenerContainer container, Exception exception,
			boolean recoverable, EOSMode eosMode) {
		if (InfrastructureFailures.isInfrastructureFailure(exception) && !recordList.isEmpty()) {
			redeliverLater(recordList, consumer, container, exception);
		}
		else {
			this.application.processBatch(records, recordList, consumer, container, exception, recoverable,
					eosMode);
		}
	}

	/**
	 * Seek each partition back to its first unprocessed record, so that nothing of them is
	 * committed and the next poll delivers them again, and wait out the back-off unless
	 * the error handler did.
	 */
	private void redeliverLater(List<ConsumerRecord<Object, Object>> records, Consumer<Object, Object> consumer,
			MessageListenerContainer container, Exception exception) {
		Map<TopicPartition, Long> firsts = new LinkedHashMap<>();
		for (ConsumerRecord<Object, Object> record : records) {
			firsts.putIfAbsent(new TopicPartition(record.topic(), record.partition()), record.offset());
		}
		InfrastructureRetryingErrorHandler.seekBack(consumer, firsts);
		if (this.errorHandler.delayed(exception)) {
			return;
		}
		ConsumerRecord<Object, Object> first = records.get(0);
		TopicPartitionOffset at = new TopicPartitionOffset(first.topic(), first.partition(), first.offset());
		Retry current = this.retry.get();
		if (current == null || !current.at().equals(at)) {
			current = new Retry(at, this.backOff.start());
			this.retry.set(current);
		}
		if (logger.isWarnEnabled()) {
			logger.warn("Transaction rolled back after a failure of the infrastructure (" + exception
					+ "); the records from " + at + " will be delivered again");
		}
		try {
			ListenerUtils.stoppableSleep(container, Math.max(0, current.execution().nextBackOff()));
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	@Override
	public void clearThreadState() {
		this.retry.remove();
		this.application.clearThreadState();
	}

	@Override
	public boolean isProcessInTransaction() {
		return this.application.isProcessInTransaction();
	}

	private record Retry(TopicPartitionOffset at, BackOffExecution execution) {
	}

	/**
	 * The wrapper of a processor that counts delivery attempts, for the container's
	 * delivery-attempt header.
	 */
	private static final class Aware extends InfrastructureRetryingAfterRollbackProcessor
			implements DeliveryAttemptAware {

		Aware(AfterRollbackProcessor<Object, Object> application, InfrastructureRetryingErrorHandler errorHandler,
				BackOff backOff) {
			super(application, errorHandler, backOff);
		}

		@Override
		public int deliveryAttempt(TopicPartitionOffset topicPartitionOffset) {
			return ((DeliveryAttemptAware) application()).deliveryAttempt(topicPartitionOffset);
		}

	}

}
