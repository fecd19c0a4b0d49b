package dev.idempotency.internal.web;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import org.jspecify.annotations.Nullable;
import org.springframework.util.function.SingletonSupplier;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerExecutionChain;
import org.springframework.web.servlet.HandlerMapping;
import org.springframework.web.util.ServletRequestPathUtils;

/**
 * Finds the handler method that will serve a request, before the dispatcher servlet does,
 * by asking the application's handler mappings as the dispatcher will. What the mappings
 * set on the request while they look (the parsed path, the matching pattern, the URI
 * variables) stays on a wrapper, so the request reaches the dispatcher as it came.
 */
final class HandlerLookup {

	private final Supplier<List<HandlerMapping>> mappings;

	/**
	 * Create a look-up.
	 * @param mappings supplies the handler mappings of annotated controllers, in order;
	 * called once, on the first look-up
	 */
	HandlerLookup(Supplier<List<HandlerMapping>> mappings) {
		this.mappings = SingletonSupplier.of(mappings);
	}

	/**
	 * Find the handler method of a request.
	 * @param request the request
	 * @return the handler method and the path pattern it matched, or {@code null} when no
	 * handler method serves the request (the dispatcher then answers as it would anyway)
	 */
	@Nullable Found find(HttpServletRequest request) {
		IsolatedRequest isolated = new IsolatedRequest(request);
		try {
			ServletRequestPathUtils.parseAndCache(isolated);
			for (HandlerMapping mapping : this.mappings.get()) {
				HandlerExecutionChain chain = mapping.getHandler(isolated);
				if (chain != null) {
					return (chain.getHandler() instanceof HandlerMethod handler) ? new Found(handler,
							String.valueOf(isolated.getAttribute(HandlerMapping.BEST_MATCHING_PATTERN_ATTRIBUTE)))
							: null;
				}
			}
		}
		catch (Exception ex) {
			// no handler for this method, media type or version: the dispatcher will say so
		}
		return null;
	}

	/**
	 * A request's handler method.
	 *
	 * @param handler the handler method
	 * @param pattern the path pattern it matched, such as {@code /payments/{id}}
	 */
	record Found(HandlerMethod handler, String pattern) {
	}

	/**
	 * A request whose attributes are set and removed on the wrapper only.
	 */
	private static final class IsolatedRequest extends HttpServletRequestWrapper {

		private static final Object REMOVED = new Object();

		private final Map<String, Object> attributes = new HashMap<>();

		IsolatedRequest(HttpServletRequest request) {
			super(request);
		}

		@Override
		public @Nullable Object getAttribute(String name) {
			Object value = this.attributes.get(name);
			if (value == REMOVED) {
				return null;
			}
			return (value != null) ? value : super.getAttribute(name);
		}

		@Override
		public void setAttribute(String name, @Nullable Object value) {
			this.attributes.put(name, (value != null) ? value : REMOVED);
		}

		@Override
		public void removeAttribute(String name) {
			this.attributes.put(name, REMOVED);
		}

	}

}
