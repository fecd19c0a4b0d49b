package dev.idempotency.internal.consumer;

import org.apache.kafka.clients.consumer.Consumer;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.listener.KafkaListenerErrorHandler;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.messaging.Message;

/**
 * Puts the infrastructure retries before every {@link KafkaListenerErrorHandler} bean (the
 * {@code errorHandler} of a {@code @KafkaListener}): spring-kafka hands a listener's
 * failure to that handler first, and one that returns has the offset committed. A failure
 * of the infrastructure (see {@link InfrastructureFailures}) that came out of an
 * {@code @Idempotent} method is thrown on instead, so that the container's error handler
 * delays the record until the database, Redis or the other consumer holding its key lets
 * it through; the handler still gets every other failure.
 */
public final class ListenerErrorHandlerPostProcessor implements BeanPostProcessor {

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		if (bean instanceof KafkaListenerErrorHandler handler && !(bean instanceof InfrastructureFirst)) {
			return new InfrastructureFirst(handler);
		}
		return bean;
	}

	private record InfrastructureFirst(KafkaListenerErrorHandler application) implements KafkaListenerErrorHandler {

		@Override
		public Object handleError(Message<?> message, ListenerExecutionFailedException exception) {
			rethrowIfInfrastructure(exception);
			return this.application.handleError(message, exception);
		}

		@Override
		public Object handleError(Message<?> message, ListenerExecutionFailedException exception,
				@Nullable Consumer<?, ?> consumer) {
			rethrowIfInfrastructure(exception);
			return this.application.handleError(message, exception, consumer);
		}

		@Override
		public @Nullable Object handleError(Message<?> message, ListenerExecutionFailedException exception,
				@Nullable Consumer<?, ?> consumer, @Nullable Acknowledgment ack) {
			rethrowIfInfrastructure(exception);
			return this.application.handleError(message, exception, consumer, ack);
		}

		private static void rethrowIfInfrastructure(ListenerExecutionFailedException exception) {
			if (IdempotentFailures.cameOutOfIdempotentMethod(exception)
					&& InfrastructureFailures.isInfrastructureFailure(exception)) {
				throw exception;
			}
		}

	}

}
