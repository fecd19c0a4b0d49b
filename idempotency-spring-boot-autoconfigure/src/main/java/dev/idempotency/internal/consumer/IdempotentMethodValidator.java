package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.util.Map;

import dev.idempotency.Idempotent;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * Stops the application context at start-up when an {@code @Idempotent} method cannot be
 * intercepted: it is not a Kafka listener, its key expression does not parse, or its
 * signature is not supported. The message names the bean and the method.
 */
public final class IdempotentMethodValidator implements BeanPostProcessor {

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		if (!AnnotationUtils.isCandidateClass(targetClass, Idempotent.class)) {
			return bean;
		}
		Map<Method, Idempotent> methods = MethodIntrospector.selectMethods(targetClass,
				(MethodIntrospector.MetadataLookup<Idempotent>) (method) -> AnnotatedElementUtils
					.findMergedAnnotation(method, Idempotent.class));
		for (Method method : methods.keySet()) {
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
