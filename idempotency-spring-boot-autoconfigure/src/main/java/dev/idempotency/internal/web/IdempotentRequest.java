package dev.idempotency.internal.web;

import java.io.IOException;
import java.util.concurrent.Callable;

import dev.idempotency.internal.key.CurrentHandling;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.store.ProcessedMessage;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletResponse;
import org.jspecify.annotations.Nullable;
import org.springframework.web.context.request.NativeWebRequest;
import org.springframework.web.context.request.async.CallableProcessingInterceptor;
import org.springframework.web.context.request.async.DeferredResult;
import org.springframework.web.context.request.async.DeferredResultProcessingInterceptor;
import org.springframework.web.context.request.async.WebAsyncManager;
import org.springframework.web.context.request.async.WebAsyncUtils;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.util.WebUtils;

/**
 * A request to an idempotent handler, with its key claimed as a message of the store.
 *
 * @param plan the handler's plan
 * @param request the request, its body read
 * @param response the response to the client
 * @param chain the rest of the filter chain, down to the handler
 * @param message the scope and key, as stored
 * @param fingerprint the request's fingerprint
 * @param metrics the meters of the handler
 */
record IdempotentRequest(EndpointPlan plan, BufferedRequest request, HttpServletResponse response, FilterChain chain,
		ProcessedMessage message, String fingerprint, ListenerMetrics metrics) {

	/**
	 * Run the handler, with its events' ids derived from the key.
	 * @param buffered the response that holds what the handler writes
	 * @throws HandlerFailure if the handler (or a filter after this one) failed
	 */
	void proceed(BufferedResponse buffered) {
		refuseAsyncProcessing();
		Object handling = CurrentHandling.bind(this.message.scope(), this.message.key());
		try {
			this.chain.doFilter(this.request, buffered);
		}
		catch (IOException | ServletException | RuntimeException | Error ex) {
			throw new HandlerFailure(ex);
		}
		finally {
			CurrentHandling.restore(handling);
		}
		if (this.request.isAsyncStarted()) {
			throw new HandlerFailure(new IllegalStateException("@Idempotent handler " + this.plan.name()
					+ " started asynchronous processing: its response cannot be stored with its claim"));
		}
	}

	// a handler whose return type did not show it (Object, ResponseEntity<?>) may still go
	// asynchronous: refuse before its work is handed to another thread
	private void refuseAsyncProcessing() {
		WebAsyncManager async = WebAsyncUtils.getAsyncManager(this.request);
		String message = "@Idempotent handler " + this.plan.name() + " returned an asynchronous result: its response "
				+ "cannot be stored with its claim. Return the response itself";
		async.registerCallableInterceptor(IdempotentRequest.class.getName(), new CallableProcessingInterceptor() {

			@Override
			public <T> void beforeConcurrentHandling(NativeWebRequest request, Callable<T> task) {
				throw new IllegalStateException(message);
			}

		});
		async.registerDeferredResultInterceptor(IdempotentRequest.class.getName(),
				new DeferredResultProcessingInterceptor() {

					@Override
					public <T> void beforeConcurrentHandling(NativeWebRequest request, DeferredResult<T> result) {
						throw new IllegalStateException(message);
					}

				});
	}

	/**
	 * Drop what the handler set on the response (status, headers such as {@code Location}
	 * or {@code Set-Cookie}), before a failure goes to the container's error handling.
	 */
	void discardResponse() {
		if (!this.response.isCommitted()) {
			this.response.reset();
		}
	}

	/**
	 * Return why a response the handler wrote must not be stored.
	 * @param response the response
	 * @param storeClientErrors whether 4xx responses are stored
	 * @return the reason, or {@code null} if it is to be stored
	 */
	@Nullable String notStored(BufferedResponse response, boolean storeClientErrors) {
		int status = response.getStatus();
		if (response.errorSent()) {
			return "it was sent as an error (" + status + ")";
		}
		if (status >= 500) {
			return "its status is " + status;
		}
		Exception thrown = HandlerExceptions.of(this.request);
		if (thrown != null || this.request.getAttribute(DispatcherServlet.EXCEPTION_ATTRIBUTE) != null
				|| this.request.getAttribute(WebUtils.ERROR_EXCEPTION_ATTRIBUTE) != null) {
			return "the handler threw " + ((thrown != null) ? thrown.getClass().getSimpleName() : "an exception")
					+ " (answered with " + status + ")";
		}
		if (status >= 400 && !storeClientErrors) {
			return "its status is " + status + " and idempotency.web.store-client-errors is false";
		}
		return null;
	}

	/**
	 * A failure of the handler, carried through the callback of a transaction.
	 */
	static final class HandlerFailure extends RuntimeException {

		private static final long serialVersionUID = 1L;

		HandlerFailure(Throwable cause) {
			super(cause.getMessage(), cause, false, false);
		}

		/**
		 * Throw the handler's failure as it was thrown.
		 * @return nothing: it always throws
		 * @throws IOException if the handler threw one
		 * @throws ServletException if the handler threw one
		 */
		RuntimeException rethrow() throws IOException, ServletException {
			Throwable cause = getCause();
			if (cause instanceof IOException io) {
				throw io;
			}
			if (cause instanceof ServletException servlet) {
				throw servlet;
			}
			if (cause instanceof Error error) {
				throw error;
			}
			throw (RuntimeException) cause;
		}

	}

}
