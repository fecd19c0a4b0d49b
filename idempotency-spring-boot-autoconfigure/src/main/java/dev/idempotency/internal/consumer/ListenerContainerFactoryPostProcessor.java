package dev.idempotency.internal.consumer;

import org.springframework.beans.DirectFieldAccessor;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.listener.BatchInterceptor;
import org.springframework.kafka.listener.CompositeBatchInterceptor;
import org.springframework.kafka.listener.CompositeRecordInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;
import org.springframework.kafka.listener.adapter.RecordFilterStrategy;

/**
 * Adds the interceptors that bind the current record or batch to every Kafka listener
 * container factory, after any interceptor the application configured, and makes its
 * record filter (if any) bind the records of a batch that pass it.
 */
public final class ListenerContainerFactoryPostProcessor implements BeanPostProcessor {

	private static final String FILTER_FIELD = "recordFilterStrategy";

	@Override
	@SuppressWarnings({ "unchecked", "rawtypes" })
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		if (bean instanceof AbstractKafkaListenerContainerFactory factory) {
			RecordInterceptor record = factory.getRecordInterceptor();
			if (!(record instanceof CurrentRecordInterceptor)) {
				RecordInterceptor binding = new CurrentRecordInterceptor();
				factory.setRecordInterceptor((record != null) ? new CompositeRecordInterceptor(record, binding) : binding);
			}
			// the factory has no getter for its filter: read the field it is kept in
			DirectFieldAccessor fields = new DirectFieldAccessor(factory);
			if (fields.isReadableProperty(FILTER_FIELD)
					&& fields.getPropertyValue(FILTER_FIELD) instanceof RecordFilterStrategy filter
					&& !(filter instanceof BindingRecordFilterStrategy)) {
				factory.setRecordFilterStrategy(new BindingRecordFilterStrategy(filter));
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
