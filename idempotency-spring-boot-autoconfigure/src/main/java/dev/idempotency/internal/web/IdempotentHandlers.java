package dev.idempotency.internal.web;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.BridgeMethodResolver;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestMethod;

/**
 * The {@code @Idempotent} handler methods of the application: checked as their beans are
 * created (a handler whose response cannot be stored stops the application with a message
 * that names it), and planned once each.
 */
public final class IdempotentHandlers implements BeanPostProcessor {

	private final WebSettings settings;

	// every handler method a request reached, with its plan or none
	private final Map<Method, Optional<EndpointPlan>> plans = new ConcurrentHashMap<>();

	// the HTTP methods of the idempotent handlers
	private final Set<String> httpMethods = ConcurrentHashMap.newKeySet();

	private volatile boolean anyMethod;

	/**
	 * Create the registry of idempotent handlers.
	 * @param settings the settings
	 */
	public IdempotentHandlers(WebSettings settings) {
		this.settings = settings;
	}

	/**
	 * Return whether a method is a Spring MVC handler method.
	 * @param method the method
	 * @return whether it carries {@code @RequestMapping} or one of its variants
	 */
	public static boolean isHandler(Method method) {
		return AnnotatedElementUtils.hasAnnotation(method, RequestMapping.class);
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		if (!AnnotationUtils.isCandidateClass(targetClass, Idempotent.class)) {
			return bean;
		}
		Map<Method, Idempotent> methods = MethodIntrospector.selectMethods(targetClass,
				(MethodIntrospector.MetadataLookup<Idempotent>) (method) -> isHandler(method)
						? AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class) : null);
		methods.forEach((method, idempotent) -> {
			try {
				plan(method);
			}
			catch (IllegalStateException ex) {
				throw new BeanInitializationException("Invalid @Idempotent method on bean '" + beanName + "': "
						+ ex.getMessage(), ex);
			}
			RequestMapping mapping = AnnotatedElementUtils.findMergedAnnotation(method, RequestMapping.class);
			if (mapping == null || mapping.method().length == 0) {
				this.anyMethod = true;
			}
			else {
				for (RequestMethod requestMethod : mapping.method()) {
					this.httpMethods.add(requestMethod.name());
				}
			}
		});
		return bean;
	}

	/**
	 * Return whether the application has an idempotent handler.
	 * @return whether one was found
	 */
	public boolean any() {
		return this.anyMethod || !this.httpMethods.isEmpty();
	}

	/**
	 * Return whether requests of an HTTP method may reach an idempotent handler, so that
	 * the others need no look-up of their handler.
	 * @param httpMethod the request's method
	 * @return whether an idempotent handler accepts the method
	 */
	boolean mayHandle(String httpMethod) {
		return this.anyMethod || this.httpMethods.contains(httpMethod);
	}

	/**
	 * Return the plan of a handler method.
	 * @param method the handler method, as its handler mapping has it
	 * @return the plan, or {@code null} if the method is not {@code @Idempotent}
	 */
	@Nullable EndpointPlan plan(Method method) {
		Optional<EndpointPlan> plan = this.plans.get(method);
		if (plan == null) {
			plan = this.plans.computeIfAbsent(method, (key) -> {
				Method specific = BridgeMethodResolver.findBridgedMethod(
						ClassUtils.getMostSpecificMethod(method, method.getDeclaringClass()));
				Idempotent idempotent = AnnotatedElementUtils.findMergedAnnotation(specific, Idempotent.class);
				return (idempotent != null) ? Optional.of(EndpointPlan.of(specific, idempotent, this.settings))
						: Optional.empty();
			});
		}
		return plan.orElse(null);
	}

}
