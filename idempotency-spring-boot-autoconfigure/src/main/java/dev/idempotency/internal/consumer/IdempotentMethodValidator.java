package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;


import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.beans.factory.config.BeanPostProcessor;

/**
 * Stops the application context at start-up when an {@code @Idempotent} method cannot be
 * intercepted: it is not a Kafka listener, its key expression does not parse, or its
 * signature is not supported. The message names the bean and the method.
 */
public final class IdempotentMethodValidator implements BeanPostProcessor {

	private final @Nullable String webHandlersUnsupported;

	/**
	 * Create a validator of listener methods, for an application whose web handlers are
	 * checked by the web support.
	 */
	public IdempotentMethodValidator() {
		this(null);
	}

	/**
	 * Create a validator.
	 * @param webHandlersUnsupported why {@code @Idempotent} web handler methods cannot be
	 * intercepted in this application, or {@code null} if they can
	 */
	public IdempotentMethodValidator(@Nullable String webHandlersUnsupported) {
		this.webHandlersUnsupported = webHandlersUnsupported;
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		if (this.webHandlersUnsupported != null) {
			for (Method method : IdempotentMethods.webHandlers(bean)) {
				throw new BeanInitializationException("Invalid @Idempotent method on bean '" + beanName + "': "
						+ method.getDeclaringClass().getSimpleName() + "." + method.getName() + " is a web handler, and "
						+ this.webHandlersUnsupported);
			}
		}
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
