package dev.idempotency.internal.consumer;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;

import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.util.StringUtils;

/**
 * Adds {@link PollBindingConsumerInterceptor} to the {@code interceptor.classes} of every
 * {@link DefaultKafkaConsumerFactory}, after any the application configured, so that
 * record listeners can ask the cache about a whole poll at once.
 */
public final class ConsumerFactoryPostProcessor implements BeanPostProcessor {

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		if (bean instanceof DefaultKafkaConsumerFactory<?, ?> factory) {
			Object configured = factory.getConfigurationProperties().get(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG);
			List<Object> interceptors = new ArrayList<>();
			if (configured instanceof Collection<?> collection) {
				interceptors.addAll(collection);
			}
			else if (configured instanceof String names) {
				interceptors.addAll(StringUtils.commaDelimitedListToSet(names.replace(" ", "")));
			}
			else if (configured != null) {
				interceptors.add(configured);
			}
			boolean present = interceptors.stream()
				.anyMatch((interceptor) -> interceptor == PollBindingConsumerInterceptor.class
						|| PollBindingConsumerInterceptor.class.getName().equals(interceptor));
			if (!present) {
				interceptors.add(PollBindingConsumerInterceptor.class.getName());
				factory.updateConfigs(Map.of(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG, interceptors));
			}
		}
		return bean;
	}

}
