package dev.idempotency.internal.web;

import java.io.IOException;

import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpHeaders;
import org.springframework.web.util.ContentCachingResponseWrapper;

/**
 * A response held back until the claim of its request is decided: the body is buffered,
 * and nothing reaches the client before the filter copies it, after the commit. A redirect
 * is buffered like any other status. An error sent with {@code sendError} goes to the
 * container at once (it renders the error page itself) and is never stored.
 */
final class BufferedResponse extends ContentCachingResponseWrapper {

	private boolean errorSent;

	BufferedResponse(HttpServletResponse response) {
		super(response);
	}

	@Override
	public void sendError(int status) throws IOException {
		this.errorSent = true;
		super.sendError(status);
	}

	@Override
	public void sendError(int status, String message) throws IOException {
		this.errorSent = true;
		super.sendError(status, message);
	}

	@Override
	public void sendRedirect(String location) throws IOException {
		// the container would commit the redirect at once, before the claim commits
		resetBuffer();
		setStatus(HttpServletResponse.SC_FOUND);
		setHeader(HttpHeaders.LOCATION, location);
	}

	/**
	 * Return whether the response was sent as an error, to be rendered by the container.
	 * @return whether {@code sendError} was called
	 */
	boolean errorSent() {
		return this.errorSent;
	}

}
