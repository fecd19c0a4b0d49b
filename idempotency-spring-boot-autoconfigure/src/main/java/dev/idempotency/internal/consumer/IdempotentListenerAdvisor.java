package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.util.function.Supplier;

import dev.idempotency.Idempotent;
import org.aopalliance.aop.Advice;
import org.aopalliance.intercept.MethodInterceptor;

import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.ComposablePointcut;
import org.springframework.aop.support.StaticMethodMatcher;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.util.function.SingletonSupplier;

/**
 * Applies the {@link IdempotentListenerInterceptor} to {@link Idempotent @Idempotent}
 * methods. The interceptor is looked up on the first invocation, so that declaring this
 * advisor does not create the data source and store while post-processors are being
 * registered.
 */
public final class IdempotentListenerAdvisor extends AbstractPointcutAdvisor {

	private static final long serialVersionUID = 1L;

	// web handler methods are intercepted by the web support, not as listeners
	private final transient Pointcut pointcut = new ComposablePointcut(
			new AnnotationMatchingPointcut(null, Idempotent.class, true))
		.intersection(new StaticMethodMatcher() {

			@Override
			public boolean matches(Method method, Class<?> targetClass) {
				return !IdempotentMethods.isWebHandler(AopUtils.getMostSpecificMethod(method, targetClass));
			}

		});

	private final transient Advice advice;

	/**
	 * Create an advisor.
	 * @param interceptor supplies the interceptor on first use
	 * @param order the order of the advisor; lower values run outside higher ones
	 */
	public IdempotentListenerAdvisor(Supplier<? extends MethodInterceptor> interceptor, int order) {
		Supplier<? extends MethodInterceptor> lazy = SingletonSupplier.of(interceptor);
		this.advice = (MethodInterceptor) (invocation) -> lazy.get().invoke(invocation);
		setOrder(order);
	}

	@Override
	public Pointcut getPointcut() {
		return this.pointcut;
	}

	@Override
	public Advice getAdvice() {
		return this.advice;
	}

}
