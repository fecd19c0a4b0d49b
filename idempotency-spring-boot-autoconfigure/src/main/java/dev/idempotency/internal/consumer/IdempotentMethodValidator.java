package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;


import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.beans.factory.config.BeanPostProcessor;

/**
 * Stops the application context at start-up when an {@code @Idempotent} method cannot be
 * intercepted: it is not a Kafka listener, its key expression does not parse, or its
 * signature is not supported. The message names the bean and the method.
 */
public final class IdempotentMethodValidator implements BeanPostProcessor {

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		for (Method method : IdempotentMethods.of(bean).keySet()) {
			try {
				ListenerMethod.describe(method, targetClass);
			}
			catch (IllegalStateException ex) {
				throw new BeanInitializationException("Invalid @Idempotent method on bean '" + beanName + "': "
						+ ex.getMessage(), ex);
			}
		}
		return bean;
	}

}
