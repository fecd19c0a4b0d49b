package dev.idempotency.internal.consumer;

import dev.idempotency.IdempotencyExceptions;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.DirectFieldAccessor;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.AfterRollbackProcessor;
import org.springframework.kafka.listener.CommonDelegatingErrorHandler;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.CommonMixedErrorHandler;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.FailedRecordProcessor;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.transaction.KafkaAwareTransactionManager;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.ExponentialBackOff;

/**
 * Puts an {@link InfrastructureRetryingErrorHandler} in front of the error handler of
 * every listener container of the registry, just before the registry starts them: the
 * application's own handler (from the container factory, a container customizer or the
 * retry topics), or spring-kafka's default {@link DefaultErrorHandler} when there is none;
 * and an {@link InfrastructureRetryingAfterRollbackProcessor} in front of its
 * after-rollback processor, which a container that runs its listener in a transaction
 * also hands each failure to. The starter's
 * {@linkplain IdempotencyExceptions#notRetryable() non-retryable exceptions} are
 * registered on a {@code DefaultErrorHandler} (also inside a
 * {@code CommonDelegatingErrorHandler} or {@code CommonMixedErrorHandler}) and a
 * {@code DefaultAfterRollbackProcessor}; a handler of another type must classify them
 * itself.
 */
public final class InfrastructureRetryInstaller implements SmartLifecycle {

	private static final Log logger = LogFactory.getLog(InfrastructureRetryInstaller.class);

	/**
	 * The fields the delegating error handlers keep their delegates in (see
	 * {@link ListenerRuntimeHints}).
	 */
	static final Map<Class<?>, List<String>> DELEGATE_FIELDS = Map.of(CommonDelegatingErrorHandler.class,
			List.of("defaultErrorHandler", "delegates"), CommonMixedErrorHandler.class,
			List.of("recordErrorHandler", "batchErrorHandler"));

	private static final int MAX_DELEGATION_DEPTH = 8;

	// the producer's default transaction.timeout.ms
	private static final long DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000;

	private final ObjectProvider<KafkaListenerEndpointRegistry> registries;

	private final Supplier<BackOff> backOff;

	private volatile boolean running;

	/**
	 * Create an installer.
	 * @param registries the listener endpoint registries
	 * @param backOff makes the back-off of each container's infrastructure retries
	 */
	public InfrastructureRetryInstaller(ObjectProvider<KafkaListenerEndpointRegistry> registries,
			Supplier<BackOff> backOff) {
		this.registries = registries;
		this.backOff = backOff;
	}

	@Override
	public void start() {
		this.registries.forEach((registry) -> registry.getAllListenerContainers().forEach(this::install));
		this.running = true;
	}

	/**
	 * Put the infrastructure retries in front of the container's error handler, unless
	 * they are there.
	 * @param container the container
	 */
	void install(MessageListenerContainer container) {
		if (container instanceof AbstractMessageListenerContainer<?, ?> listenerContainer
				&& !(listenerContainer.getCommonErrorHandler() instanceof InfrastructureRetryingErrorHandler)) {
			CommonErrorHandler application = listenerContainer.getCommonErrorHandler();
			if (application == null) {
				application = new DefaultErrorHandler();
			}
			// retrying cannot cure these: straight to the recoverer
			notRetryable(application, 0);
			InfrastructureRetryingErrorHandler errorHandler = new InfrastructureRetryingErrorHandler(application,
					this.backOff.get());
			listenerContainer.setCommonErrorHandler(errorHandler);
			// a transactional container hands a failed record to this processor too, and it
			// would recover the record (and commit its offset) after its own attempts
			AfterRollbackProcessor<?, ?> afterRollback = listenerContainer.getAfterRollbackProcessor();
			if (afterRollback instanceof InfrastructureRetryingAfterRollbackProcessor wrapped) {
				afterRollback = wrapped.application();
			}
			if (afterRollback instanceof FailedRecordProcessor processor) {
				processor.addNotRetryableExceptions(IdempotencyExceptions.notRetryable());
			}
			BackOff afterRollbackBackOff = this.backOff.get();
			listenerContainer.setAfterRollbackProcessor(
					InfrastructureRetryingAfterRollbackProcessor.of(afterRollback, errorHandler, afterRollbackBackOff));
			warnIfLongerThanTheTransaction(listenerContainer, afterRollbackBackOff);
			if (logger.isDebugEnabled()) {
				logger.debug("Infrastructure failures of container " + container.getListenerId()
						+ " are retried without end before its error handler sees them");
			}
		}
	}

	/**
	 * A Kafka-transactional container waits out the back-off inside its open transaction,
	 * which the broker aborts after the producer's {@code transaction.timeout.ms} (and
	 * fences the producer): warn when one wait can last that long.
	 */
	private static void warnIfLongerThanTheTransaction(AbstractMessageListenerContainer<?, ?> container,
			BackOff backOff) {
		KafkaAwareTransactionManager<?, ?> transactions = container.getContainerProperties()
			.getKafkaAwareTransactionManager();
		if (transactions == null || !(backOff instanceof ExponentialBackOff exponential)) {
			return;
		}
		Object configured = transactions.getProducerFactory()
			.getConfigurationProperties()
			.get(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG);
		long timeout = DEFAULT_TRANSACTION_TIMEOUT_MS;
		if (configured instanceof Number number) {
			timeout = number.longValue();
		}
		else if (configured instanceof String text) {
			try {
				timeout = Long.parseLong(text.trim());
			}
			catch (NumberFormatException ex) {
				return;
			}
		}
		if (exponential.getMaxInterval() >= timeout) {
			logger.warn("Container " + container.getListenerId() + " runs its listener in a Kafka transaction and "
					+ "waits out infrastructure failures inside it: idempotency.infrastructure-retry.max-interval ("
					+ exponential.getMaxInterval() + " ms) is not below the producer's transaction.timeout.ms ("
					+ timeout + " ms), so during a long outage the broker aborts the transaction and fences the "
					+ "producer at every wait. Set the max-interval well below the transaction timeout.");
		}
	}

	/**
	 * Register the starter's non-retryable exceptions on a {@code DefaultErrorHandler}, and
	 * on those a {@link CommonDelegatingErrorHandler} or {@link CommonMixedErrorHandler}
	 * delegates to (they have no getters: the fields are read, and a handler whose fields
	 * cannot be read is left alone).
	 */
	private static void notRetryable(@Nullable Object handler, int depth) {
		if (handler instanceof DefaultErrorHandler defaultErrorHandler) {
			defaultErrorHandler.addNotRetryableExceptions(IdempotencyExceptions.notRetryable());
		}
		else if (handler != null && depth < MAX_DELEGATION_DEPTH) {
			DELEGATE_FIELDS.forEach((type, names) -> {
				if (!type.isInstance(handler)) {
					return;
				}
				DirectFieldAccessor fields = new DirectFieldAccessor(handler);
				for (String field : names) {
					if (fields.isReadableProperty(field)) {
						Object delegate = fields.getPropertyValue(field);
						if (delegate instanceof Map<?, ?> delegates) {
							delegates.values().forEach((each) -> notRetryable(each, depth + 1));
						}
						else {
							notRetryable(delegate, depth + 1);
						}
					}
				}
			});
		}
	}

	@Override
	public void stop() {
		this.running = false;
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	@Override
	public int getPhase() {
		// before the registry, which starts the containers
		return AbstractMessageListenerContainer.DEFAULT_PHASE - 100;
	}

}
