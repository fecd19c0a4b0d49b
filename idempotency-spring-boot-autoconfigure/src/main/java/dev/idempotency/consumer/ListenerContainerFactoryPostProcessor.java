package dev.idempotency.consumer;

import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.listener.CompositeRecordInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;

/**
 * Adds the interceptor that binds the current record to every Kafka listener container
 * factory, after any record interceptor the application configured.
 */
public final class ListenerContainerFactoryPostProcessor implements BeanPostProcessor {

	@Override
	@SuppressWarnings({ "unchecked", "rawtypes" })
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		if (bean instanceof AbstractKafkaListenerContainerFactory factory) {
			RecordInterceptor existing = factory.getRecordInterceptor();
			if (!(existing instanceof CurrentRecordInterceptor)) {
				RecordInterceptor binding = new CurrentRecordInterceptor();
				factory.setRecordInterceptor(
						(existing != null) ? new CompositeRecordInterceptor(existing, binding) : binding);
			}
		}
		return bean;
	}

}
