package dev.idempotency.internal.consumer;

import java.lang.reflect.Proxy;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.kafka.listener.KafkaListenerErrorHandler;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.GenericMessage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The shapes of {@code KafkaListenerErrorHandler} beans the post-processor proxies: each
 * still handles the application's failures itself and throws on the infrastructure's.
 */
class ListenerErrorHandlerPostProcessorUnitTests {

	private final ListenerErrorHandlerPostProcessor postProcessor = new ListenerErrorHandlerPostProcessor();

	@Test
	void aHandlerWhoseHandleErrorIsFinalStillHandlesAndStillLetsOutagesThrough() {
		KafkaListenerErrorHandler handler = (KafkaListenerErrorHandler) this.postProcessor
			.postProcessAfterInitialization(new FinalMethodHandler(), "handler");
		assertThat(handler.handleError(new GenericMessage<>("p"),
				new ListenerExecutionFailedException("failed", new IllegalStateException("its own"))))
			.isEqualTo("configured");
		assertOutageThrows(handler);
	}

	@Test
	void aRecordHandlerStillHandlesAndStillLetsOutagesThrough() {
		KafkaListenerErrorHandler handler = (KafkaListenerErrorHandler) this.postProcessor
			.postProcessAfterInitialization(new RecordHandler("configured"), "handler");
		assertThat(handler.handleError(new GenericMessage<>("p"),
				new ListenerExecutionFailedException("failed", new IllegalStateException("its own"))))
			.isEqualTo("configured");
		assertOutageThrows(handler);
	}

	@Test
	void aPlainHandlerStaysItsOwnType() {
		Object handler = this.postProcessor.postProcessAfterInitialization(new PlainHandler(), "handler");
		assertThat(handler).isInstanceOf(PlainHandler.class);
		assertOutageThrows((KafkaListenerErrorHandler) handler);
	}

	@Test
	void theTypeItTellsAheadOfTimeIsTheClassOfTheProxyItCreates() {
		assertAheadOfTimeType(PlainHandler.class, new PlainHandler());
		assertAheadOfTimeType(FinalMethodHandler.class, new FinalMethodHandler());
		assertAheadOfTimeType(RecordHandler.class, new RecordHandler("configured"));
		// a @Bean method declared to return the interface, and returning a lambda
		KafkaListenerErrorHandler lambda = (message, exception) -> "configured";
		assertAheadOfTimeType(KafkaListenerErrorHandler.class, lambda);
	}

	@Test
	void aHandlerDeclaredAsTheInterfaceIsProxiedAsTheInterfaceAheadOfTimeAndAtRunTime() {
		DefaultListableBeanFactory beanFactory = new DefaultListableBeanFactory();
		beanFactory.registerBeanDefinition("handlers", new RootBeanDefinition(Handlers.class));
		RootBeanDefinition definition = new RootBeanDefinition();
		definition.setFactoryBeanName("handlers");
		definition.setFactoryMethodName("plainHandler");
		beanFactory.registerBeanDefinition("handler", definition);
		this.postProcessor.setBeanFactory(beanFactory);
		beanFactory.addBeanPostProcessor(this.postProcessor);
		// all Spring AOT knows of the bean: the return type of its @Bean method
		Class<?> declared = beanFactory.getType("handler");
		assertThat(declared).isEqualTo(KafkaListenerErrorHandler.class);
		Class<?> aheadOfTime = this.postProcessor.determineBeanType(declared, "handler");
		Object handler = beanFactory.getBean("handler");
		assertThat(handler.getClass()).isSameAs(aheadOfTime);
		assertThat(Proxy.isProxyClass(aheadOfTime)).isTrue();
		assertOutageThrows((KafkaListenerErrorHandler) handler);
	}

	@Test
	void otherBeansKeepTheirTypeAheadOfTime() {
		assertThat(this.postProcessor.determineBeanType(String.class, "other")).isEqualTo(String.class);
	}

	// AOT generates the class, or the hint for it, from the type told at build time; the
	// proxy created at run time must be of that very class
	private void assertAheadOfTimeType(Class<?> definedType, KafkaListenerErrorHandler bean) {
		Class<?> aheadOfTime = this.postProcessor.determineBeanType(definedType, "handler");
		assertThat(aheadOfTime).isNotEqualTo(definedType)
			.isSameAs(this.postProcessor.postProcessAfterInitialization(bean, "handler").getClass());
	}

	private static void assertOutageThrows(KafkaListenerErrorHandler handler) {
		RuntimeException outage = new DataAccessResourceFailureException("database down");
		// as the interceptor does when an @Idempotent method fails
		IdempotentFailures.remember(outage);
		assertThatExceptionOfType(ListenerExecutionFailedException.class).isThrownBy(
				() -> handler.handleError(new GenericMessage<>("p"), new ListenerExecutionFailedException("x", outage)));
	}

	static class Handlers {

		KafkaListenerErrorHandler plainHandler() {
			return new PlainHandler();
		}

	}

	record RecordHandler(String name) implements KafkaListenerErrorHandler {

		@Override
		public Object handleError(Message<?> message, ListenerExecutionFailedException exception) {
			return this.name;
		}

	}

	static class FinalMethodHandler implements KafkaListenerErrorHandler {

		private final String name = String.valueOf("configured");

		@Override
		public final Object handleError(Message<?> message, ListenerExecutionFailedException exception) {
			return this.name;
		}

	}

	static class PlainHandler implements KafkaListenerErrorHandler {

		@Override
		public Object handleError(Message<?> message, ListenerExecutionFailedException exception) {
			return "configured";
		}

	}

}
