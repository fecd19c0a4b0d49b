package dev.idempotency.internal.web;

import java.io.IOException;

import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpHeaders;
import org.springframework.web.util.ContentCachingResponseWrapper;

/**
 * A response held back until the claim of its request is decided: the body is buffered,
 * and nothing of it reaches the client before the filter {@linkplain #release() releases}
 * it, after the commit; a filter further down that copies a cached body to the client
 * (a common idiom of logging filters) copies nothing before that. A redirect is buffered
 * like any other status. An error sent with {@code sendError} goes to the container at
 * once, without the buffered body (it renders the error page itself), and is never stored.
 */
final class BufferedResponse extends ContentCachingResponseWrapper {

	private boolean errorSent;

	private boolean released;

	BufferedResponse(HttpServletResponse response) {
		super(response);
	}

	@Override
	public void sendError(int status) throws IOException {
		this.errorSent = true;
		resetBuffer();
		super.sendError(status);
	}

	@Override
	public void sendError(int status, String message) throws IOException {
		this.errorSent = true;
		resetBuffer();
		super.sendError(status, message);
	}

	@Override
	public void sendRedirect(String location) throws IOException {
		sendRedirect(location, HttpServletResponse.SC_FOUND, true);
	}

	@Override
	public void sendRedirect(String location, int status, boolean clearBuffer) throws IOException {
		// the container would send the redirect at once, before the claim commits
		if (clearBuffer) {
			resetBuffer();
		}
		setStatus(status);
		setHeader(HttpHeaders.LOCATION, location);
	}

	@Override
	public void copyBodyToResponse() throws IOException {
		copyBodyToResponse(true);
	}

	@Override
	protected void copyBodyToResponse(boolean complete) throws IOException {
		if (this.released) {
			super.copyBodyToResponse(complete);
		}
	}

	/**
	 * Send the buffered response to the client, once its claim is decided.
	 * @throws IOException if writing fails
	 */
	void release() throws IOException {
		this.released = true;
		super.copyBodyToResponse(true);
	}

	/**
	 * Return whether the response was sent as an error, to be rendered by the container.
	 * @return whether {@code sendError} was called
	 */
	boolean errorSent() {
		return this.errorSent;
	}

}
