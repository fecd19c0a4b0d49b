package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.util.Map;

import dev.idempotency.Idempotent;

import org.springframework.aop.support.AopUtils;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * Finds the {@code @Idempotent} methods of a bean, for the post-processors that check them
 * at start-up.
 */
public final class IdempotentMethods {

	private IdempotentMethods() {
	}

	/**
	 * Return the {@code @Idempotent} methods of a bean's class (behind any proxy), with
	 * their annotations.
	 * @param bean the bean
	 * @return the methods, as declared on the user's class; empty for most beans
	 */
	public static Map<Method, Idempotent> of(Object bean) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		if (!AnnotationUtils.isCandidateClass(targetClass, Idempotent.class)) {
			return Map.of();
		}
		return MethodIntrospector.selectMethods(targetClass,
				(MethodIntrospector.MetadataLookup<Idempotent>) (method) -> AnnotatedElementUtils
					.findMergedAnnotation(method, Idempotent.class));
	}

}
