package dev.idempotency.consumer;

import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.listener.BatchInterceptor;
import org.springframework.kafka.listener.CompositeBatchInterceptor;
import org.springframework.kafka.listener.CompositeRecordInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;

/**
 * Adds the interceptors that bind the current record or batch to every Kafka listener
 * container factory, after any interceptor the application configured.
 */
public final class ListenerContainerFactoryPostProcessor implements BeanPostProcessor {

	@Override
	@SuppressWarnings({ "unchecked", "rawtypes" })
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		if (bean instanceof AbstractKafkaListenerContainerFactory factory) {
			RecordInterceptor record = factory.getRecordInterceptor();
			if (!(record instanceof CurrentRecordInterceptor)) {
				RecordInterceptor binding = new CurrentRecordInterceptor();
				factory.setRecordInterceptor((record != null) ? new CompositeRecordInterceptor(record, binding) : binding);
			}
			BatchInterceptor batch = factory.getBatchInterceptor();
			if (!(batch instanceof CurrentBatchInterceptor)) {
				BatchInterceptor binding = new CurrentBatchInterceptor();
				factory.setBatchInterceptor((batch != null) ? new CompositeBatchInterceptor(batch, binding) : binding);
			}
		}
		return bean;
	}

}
