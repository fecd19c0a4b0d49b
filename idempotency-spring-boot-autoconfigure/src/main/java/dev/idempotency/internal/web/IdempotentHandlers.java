package dev.idempotency.internal.web;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import org.jspecify.annotations.Nullable;
import org.springframework.core.BridgeMethodResolver;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping;

/**
 * The {@code @Idempotent} handler methods of the application: found in the handler
 * mappings once the application's beans are created, checked (a handler whose response
 * cannot be stored stops the application with a message that names it), and planned once
 * each.
 */
public final class IdempotentHandlers {

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
	 * Find and check the idempotent handler methods of a handler mapping, including those
	 * of controllers that are created lazily.
	 * @param mapping the handler mapping of annotated controllers
	 * @throws IllegalStateException with a message that names the handler, if one cannot
	 * be an idempotent handler
	 */
	public void register(RequestMappingInfoHandlerMapping mapping) {
		mapping.getHandlerMethods().forEach((info, handler) -> {
			EndpointPlan plan;
			try {
				plan = plan(handler.getMethod());
			}
			catch (IllegalStateException ex) {
				throw new IllegalStateException("Invalid @Idempotent method on bean '" + handler.getBean() + "': "
						+ ex.getMessage(), ex);
			}
			if (plan == null) {
				return;
			}
			Set<RequestMethod> methods = info.getMethodsCondition().getMethods();
			if (methods.isEmpty()) {
				this.anyMethod = true;
			}
			for (RequestMethod method : methods) {
				this.httpMethods.add(method.name());
				if (method == RequestMethod.GET) {
					this.httpMethods.add(RequestMethod.HEAD.name());
				}
			}
		});
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
