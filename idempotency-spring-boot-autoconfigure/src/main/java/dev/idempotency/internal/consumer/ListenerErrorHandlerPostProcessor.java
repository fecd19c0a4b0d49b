package dev.idempotency.internal.consumer;

import java.lang.reflect.Modifier;

import org.aopalliance.intercept.MethodInterceptor;

import org.springframework.aop.framework.Advised;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.NameMatchMethodPointcutAdvisor;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.listener.KafkaListenerErrorHandler;
import org.springframework.kafka.listener.ListenerExecutionFailedException;

/**
 * Puts the infrastructure retries before every {@link KafkaListenerErrorHandler} bean (the
 * {@code errorHandler} of a {@code @KafkaListener}): spring-kafka hands a listener's
 * failure to that handler first, and one that returns has the offset committed. A failure
 * of the infrastructure (see {@link InfrastructureFailures}) that came out of an
 * {@code @Idempotent} method is thrown on instead, so that the container's error handler
 * delays the record until the database, Redis or the other consumer holding its key lets
 * it through; the handler still gets every other failure. The bean is proxied, by its
 * class where the class can be subclassed, so that it can still be injected as its own
 * type.
 */
public final class ListenerErrorHandlerPostProcessor implements BeanPostProcessor {

	private static final NameMatchMethodPointcutAdvisor INFRASTRUCTURE_FIRST = new NameMatchMethodPointcutAdvisor(
			(MethodInterceptor) (invocation) -> {
				for (Object argument : invocation.getArguments()) {
					if (argument instanceof ListenerExecutionFailedException failure
							&& IdempotentFailures.cameOutOfIdempotentMethod(failure)
							&& InfrastructureFailures.isInfrastructureFailure(failure)) {
						throw failure;
					}
				}
				return invocation.proceed();
			});

	static {
		INFRASTRUCTURE_FIRST.setMappedName("handleError");
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		if (!(bean instanceof KafkaListenerErrorHandler)) {
			return bean;
		}
		if (bean instanceof Advised advised && !advised.isFrozen()) {
			advised.addAdvisor(0, INFRASTRUCTURE_FIRST);
			return bean;
		}
		ProxyFactory proxy = new ProxyFactory(bean);
		proxy.setProxyTargetClass(!Modifier.isFinal(AopUtils.getTargetClass(bean).getModifiers()));
		proxy.addAdvisor(INFRASTRUCTURE_FIRST);
		return proxy.getProxy(bean.getClass().getClassLoader());
	}

}
