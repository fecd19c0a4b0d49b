package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

import org.aopalliance.intercept.MethodInterceptor;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.TargetSource;
import org.springframework.aop.framework.Advised;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.NameMatchMethodPointcutAdvisor;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
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
 * it through; the handler still gets every other failure. The bean is proxied as the type
 * its definition declares (a {@code @Bean} method's return type): by that class where the
 * class and its {@code handleError} methods can be overridden, so that it can still be
 * injected as its own type; else by its interfaces.
 * <p>
 * Ahead of time (Spring AOT), it tells the type of the proxy it will create from that
 * declared type, the only one known then, so that a class-based proxy is generated at
 * build time and a proxy of interfaces gets its hint: a native image cannot define either
 * at run time.
 */
public final class ListenerErrorHandlerPostProcessor implements SmartInstantiationAwareBeanPostProcessor,
		BeanFactoryAware {

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

	private @Nullable ConfigurableListableBeanFactory beanFactory;

	@Override
	public void setBeanFactory(BeanFactory beanFactory) {
		if (beanFactory instanceof ConfigurableListableBeanFactory listable) {
			this.beanFactory = listable;
		}
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
		Class<?> type = declaredType(AopUtils.getTargetClass(bean), beanName);
		ProxyFactory proxy = proxyFactory(type);
		proxy.setTargetSource(new DeclaredTypeTarget(type, bean));
		return proxy.getProxy(type.getClassLoader());
	}

	@Override
	public Class<?> determineBeanType(Class<?> beanClass, String beanName) {
		if (!KafkaListenerErrorHandler.class.isAssignableFrom(beanClass) || Advised.class.isAssignableFrom(beanClass)) {
			return beanClass;
		}
		return proxyFactory(beanClass).getProxyClass(beanClass.getClassLoader());
	}

	// the type the bean's definition declares, which is all Spring AOT knows of it, where
	// it is a supertype of the bean's class: a @Bean method that returns the interface
	private Class<?> declaredType(Class<?> beanClass, String beanName) {
		if (this.beanFactory != null && this.beanFactory.containsBeanDefinition(beanName)) {
			Class<?> declared = this.beanFactory.getMergedBeanDefinition(beanName).getResolvableType().resolve();
			if (declared != null && KafkaListenerErrorHandler.class.isAssignableFrom(declared)
					&& declared.isAssignableFrom(beanClass)) {
				return declared;
			}
		}
		return beanClass;
	}

	/**
	 * The bean, as the type it is proxied as (a plain target would make it its class).
	 */
	private record DeclaredTypeTarget(Class<?> type, Object bean) implements TargetSource {

		@Override
		public Class<?> getTargetClass() {
			return this.type;
		}

		@Override
		public boolean isStatic() {
			return true;
		}

		@Override
		public Object getTarget() {
			return this.bean;
		}

	}

	// one proxy class for a type, ahead of time and at run time
	private static ProxyFactory proxyFactory(Class<?> type) {
		ProxyFactory proxy = new ProxyFactory();
		proxy.setTargetClass(type);
		proxy.setInterfaces(ClassUtils.getAllInterfacesForClass(type, type.getClassLoader()));
		proxy.setProxyTargetClass(canSubclass(type));
		proxy.addAdvisor(INFRASTRUCTURE_FIRST);
		return proxy;
	}

}
