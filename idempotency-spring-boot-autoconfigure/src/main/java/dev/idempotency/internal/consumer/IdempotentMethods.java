package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.Set;

import dev.idempotency.Idempotent;

import org.springframework.aop.support.AopUtils;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.util.ReflectionUtils;

/**
 * Finds the {@code @Idempotent} methods of a bean, for the post-processors that check them
 * at start-up.
 */
public final class IdempotentMethods {

	private static final String REQUEST_MAPPING = "org.springframework.web.bind.annotation.RequestMapping";

	private IdempotentMethods() {
	}

	/**
	 * Return the {@code @Idempotent} listener methods of a bean's class (behind any proxy),
	 * with their annotations: every annotated method but the web handlers.
	 * @param bean the bean
	 * @return the methods, as declared on the user's class; empty for most beans
	 */
	public static Map<Method, Idempotent> of(Object bean) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		if (!AnnotationUtils.isCandidateClass(targetClass, Idempotent.class)) {
			return Map.of();
		}
		return MethodIntrospector.selectMethods(targetClass,
				(MethodIntrospector.MetadataLookup<Idempotent>) (method) -> isWebHandler(method) ? null
						: AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class));
	}

	/**
	 * Return the {@code @Idempotent} web handler methods of a bean's class (behind any
	 * proxy), which {@link #of(Object)} leaves out.
	 * @param bean the bean
	 * @return the methods, as declared on the user's class; empty for most beans
	 */
	public static Set<Method> webHandlers(Object bean) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		if (!AnnotationUtils.isCandidateClass(targetClass, Idempotent.class)) {
			return Set.of();
		}
		return MethodIntrospector.selectMethods(targetClass,
				(ReflectionUtils.MethodFilter) (method) -> isWebHandler(method)
						&& AnnotatedElementUtils.hasAnnotation(method, Idempotent.class));
	}

	/**
	 * Return whether a method is a Spring MVC or WebFlux handler method, which the listener
	 * interceptor leaves to the web support.
	 * @param method the method
	 * @return whether it carries {@code @RequestMapping} or one of its variants
	 */
	public static boolean isWebHandler(Method method) {
		return MergedAnnotations.from(method, MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)
			.isPresent(REQUEST_MAPPING);
	}

}
