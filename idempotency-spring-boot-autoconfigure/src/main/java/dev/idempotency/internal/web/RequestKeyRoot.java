package dev.idempotency.internal.web;

import java.util.Collections;
import java.util.Map;

import jakarta.servlet.http.HttpServletRequest;
import org.jspecify.annotations.Nullable;
import org.springframework.util.LinkedCaseInsensitiveMap;

/**
 * The root object of an HTTP handler's key expression, such as
 * {@code "headers['X-Request-Id']"} or {@code "request.getParameter('order')"}.
 */
public final class RequestKeyRoot {

	private final HttpServletRequest request;

	RequestKeyRoot(HttpServletRequest request) {
		this.request = request;
	}

	/**
	 * Return the request.
	 * @return the request
	 */
	public HttpServletRequest getRequest() {
		return this.request;
	}

	/**
	 * Return the request's headers, each with its first value.
	 * @return the headers, by name (case-insensitive)
	 */
	public Map<String, @Nullable String> getHeaders() {
		Map<String, @Nullable String> headers = new LinkedCaseInsensitiveMap<>();
		for (String name : Collections.list(this.request.getHeaderNames())) {
			headers.putIfAbsent(name, this.request.getHeader(name));
		}
		return headers;
	}

	/**
	 * Return the request's method.
	 * @return the method, such as {@code POST}
	 */
	public String getMethod() {
		return this.request.getMethod();
	}

	/**
	 * Return the request's path, without the query string.
	 * @return the path
	 */
	public String getPath() {
		return this.request.getRequestURI();
	}

}
