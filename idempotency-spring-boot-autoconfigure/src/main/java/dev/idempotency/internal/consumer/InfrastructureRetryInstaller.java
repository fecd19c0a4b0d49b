package dev.idempotency.internal.consumer;

import dev.idempotency.IdempotencyExceptions;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
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
import org.springframework.util.backoff.BackOff;

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

	// of CommonDelegatingErrorHandler and CommonMixedErrorHandler
	private static final List<String> DELEGATE_FIELDS = List.of("defaultErrorHandler", "delegates",
			"recordErrorHandler", "batchErrorHandler");

	private static final int MAX_DELEGATION_DEPTH = 8;

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
			listenerContainer.setAfterRollbackProcessor(
					InfrastructureRetryingAfterRollbackProcessor.of(afterRollback, errorHandler, this.backOff.get()));
			if (logger.isDebugEnabled()) {
				logger.debug("Infrastructure failures of container " + container.getListenerId()
						+ " are retried without end before its error handler sees them");
			}
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
		else if ((handler instanceof CommonDelegatingErrorHandler || handler instanceof CommonMixedErrorHandler)
				&& depth < MAX_DELEGATION_DEPTH) {
			DirectFieldAccessor fields = new DirectFieldAccessor(handler);
			for (String field : DELEGATE_FIELDS) {
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
