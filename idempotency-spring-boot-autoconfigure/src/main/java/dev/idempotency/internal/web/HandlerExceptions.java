package dev.idempotency.internal.web;

import jakarta.servlet.ServletRequest;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.ModelAndView;

/**
 * Notes on the request that its handler threw, before any of the application's exception
 * resolvers answers it: whatever status, view or redirect they make of it, the response
 * of an exception is not stored and its work is not kept.
 */
public final class HandlerExceptions implements HandlerExceptionResolver, Ordered {

	private static final String ATTRIBUTE = HandlerExceptions.class.getName() + ".EXCEPTION";

	@Override
	public @Nullable ModelAndView resolveException(HttpServletRequest request, HttpServletResponse response,
			@Nullable Object handler, Exception ex) {
		request.setAttribute(ATTRIBUTE, ex);
		return null;
	}

	@Override
	public int getOrder() {
		return Ordered.HIGHEST_PRECEDENCE;
	}

	/**
	 * Return the exception a request's handler threw, if it threw one.
	 * @param request the request
	 * @return the exception, or {@code null}
	 */
	static @Nullable Exception of(ServletRequest request) {
		return (Exception) request.getAttribute(ATTRIBUTE);
	}

}
