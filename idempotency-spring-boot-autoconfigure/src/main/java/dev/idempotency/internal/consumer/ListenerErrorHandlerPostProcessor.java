package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

import org.aopalliance.intercept.MethodInterceptor;

import org.springframework.aop.framework.Advised;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.NameMatchMethodPointcutAdvisor;
import org.springframework.beans.factory.config.SmartInstantiationAwareBeanPostProcessor;
import org.springframework.kafka.listener.KafkaListenerErrorHandler;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Puts the infrastructure retries before every {@link KafkaListenerErrorHandler} bean (the
 * {@code errorHandler} of a {@code @KafkaListener}): spring-kafka hands a listener's
 * failure to that handler first, and one that returns has the offset committed. A failure
 * of the infrastructure (see {@link InfrastructureFailures}) that came out of an
 * {@code @Idempotent} method is thrown on instead, so that the container's error handler
 * delays the record until the database, Redis or the other consumer holding its key lets
 * it through; the handler still gets every other failure. The bean is proxied, by its
 * class where the class and its {@code handleError} methods can be overridden, so that it
 * can still be injected as its own type; else by its interfaces.
 * <p>
 * Ahead of time (Spring AOT), it tells the type of the proxy it will create, so that a
 * class-based proxy is generated at build time and a proxy of interfaces gets its hint:
 * a native image cannot define either at run time.
 */
public final class ListenerErrorHandlerPostProcessor implements SmartInstantiationAwareBeanPostProcessor {

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

	// a subclass could not intercept a final handleError: it would run on the empty proxy
	private static boolean canSubclass(Class<?> type) {
		if (Modifier.isFinal(type.getModifiers())) {
			return false;
		}
		for (Method method : ReflectionUtils.getUniqueDeclaredMethods(type)) {
			if (method.getName().equals("handleError") && Modifier.isFinal(method.getModifiers())) {
				return false;
			}
		}
		return true;
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
		proxy.setProxyTargetClass(canSubclass(AopUtils.getTargetClass(bean)));
		proxy.addAdvisor(INFRASTRUCTURE_FIRST);
		return proxy.getProxy(bean.getClass().getClassLoader());
	}

	// the class postProcessAfterInitialization will return for a bean of this class; a
	// bean whose definition names an interface (a lambda, say) is proxied by its interfaces
	@Override
	public Class<?> determineBeanType(Class<?> beanClass, String beanName) {
		if (!KafkaListenerErrorHandler.class.isAssignableFrom(beanClass) || Advised.class.isAssignableFrom(beanClass)) {
			return beanClass;
		}
		ProxyFactory proxy = new ProxyFactory();
		proxy.setTargetClass(beanClass);
		proxy.setInterfaces(ClassUtils.getAllInterfacesForClass(beanClass, beanClass.getClassLoader()));
		proxy.setProxyTargetClass(canSubclass(beanClass));
		proxy.addAdvisor(INFRASTRUCTURE_FIRST);
		return proxy.getProxyClass(beanClass.getClassLoader());
	}

}
