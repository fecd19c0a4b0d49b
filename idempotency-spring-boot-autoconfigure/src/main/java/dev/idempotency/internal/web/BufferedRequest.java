package dev.idempotency.internal.web;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.Part;
import org.jspecify.annotations.Nullable;
import org.springframework.http.MediaType;

/**
 * A request whose body was read before its handler runs, so that it can be fingerprinted;
 * the handler reads the same bytes. A form ({@code application/x-www-form-urlencoded} or
 * {@code multipart/*}) is left to the container to parse and fingerprinted by its
 * parameters and parts.
 */
final class BufferedRequest extends HttpServletRequestWrapper {

	private final byte[] body;

	private final boolean form;

	private BufferedRequest(HttpServletRequest request, byte[] body, boolean form) {
		super(request);
		this.body = body;
		this.form = form;
	}

	/**
	 * Read a request's body.
	 * @param request the request
	 * @param maxSize the largest body read, in bytes
	 * @return the request with its body read
	 * @throws RequestTooLargeException if the body is larger
	 * @throws IOException if the body cannot be read
	 */
	static BufferedRequest read(HttpServletRequest request, long maxSize) throws IOException {
		String contentType = request.getContentType();
		if (contentType != null && (contentType.regionMatches(true, 0, MediaType.APPLICATION_FORM_URLENCODED_VALUE, 0,
				MediaType.APPLICATION_FORM_URLENCODED_VALUE.length())
				|| contentType.regionMatches(true, 0, "multipart/", 0, 10))) {
			// the container parses these bodies for the handler: fingerprint what it parsed
			return new BufferedRequest(request, new byte[0], true);
		}
		long declared = request.getContentLengthLong();
		if (declared > maxSize) {
			throw new RequestTooLargeException(declared, maxSize);
		}
		InputStream input = request.getInputStream();
		byte[] body = input.readNBytes((int) Math.min(maxSize + 1, Integer.MAX_VALUE - 8));
		if (body.length > maxSize) {
			throw new RequestTooLargeException(-1, maxSize);
		}
		return new BufferedRequest(request, body, false);
	}

	/**
	 * Return the SHA-256 fingerprint of what makes this request the request it is: its
	 * method, its path and query, the given headers and its body (or form parameters).
	 * @param headers the names of the headers to include, in lower case
	 * @return the fingerprint, as 64 hex digits
	 */
	String fingerprint(List<String> headers) {
		MessageDigest digest;
		try {
			digest = MessageDigest.getInstance("SHA-256");
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException("SHA-256 is not available", ex);
		}
		update(digest, getMethod());
		update(digest, getRequestURI());
		update(digest, getQueryString());
		for (String name : headers) {
			update(digest, name);
			List<String> values = Collections.list(getHeaders(name));
			update(digest, values.size());
			for (String value : values) {
				update(digest, value);
			}
		}
		if (this.form) {
			Map<String, String[]> parameters = new TreeMap<>(getParameterMap());
			update(digest, parameters.size());
			for (Map.Entry<String, String[]> parameter : parameters.entrySet()) {
				update(digest, parameter.getKey());
				update(digest, parameter.getValue().length);
				for (String value : parameter.getValue()) {
					update(digest, value);
				}
			}
		}
		else {
			update(digest, this.body);
		}
		if (this.form && getContentType() != null && getContentType().regionMatches(true, 0, "multipart/", 0, 10)) {
			updateParts(digest);
		}
		return HexFormat.of().formatHex(digest.digest());
	}

	private void updateParts(MessageDigest digest) {
		try {
			for (Part part : getParts()) {
				update(digest, part.getName());
				update(digest, part.getSubmittedFileName());
				try (InputStream content = part.getInputStream()) {
					update(digest, content.readAllBytes());
				}
			}
		}
		catch (IOException | ServletException | IllegalStateException ex) {
			throw new IllegalStateException("The parts of a multipart request to an idempotent handler could not be "
					+ "read to fingerprint it (is multipart handling enabled?)", ex);
		}
	}

	// every part with its length first, so that no two sequences of parts digest alike
	private static void update(MessageDigest digest, @Nullable String part) {
		if (part == null) {
			update(digest, -1);
			return;
		}
		update(digest, part.getBytes(StandardCharsets.UTF_8));
	}

	private static void update(MessageDigest digest, byte[] part) {
		update(digest, part.length);
		digest.update(part);
	}

	private static void update(MessageDigest digest, int number) {
		digest.update(ByteBuffer.allocate(4).putInt(number).array());
	}

	@Override
	public ServletInputStream getInputStream() throws IOException {
		if (this.form) {
			return super.getInputStream();
		}
		ByteArrayInputStream bytes = new ByteArrayInputStream(this.body);
		return new ServletInputStream() {

			@Override
			public int read() {
				return bytes.read();
			}

			@Override
			public int read(byte[] buffer, int offset, int length) {
				return bytes.read(buffer, offset, length);
			}

			@Override
			public boolean isFinished() {
				return bytes.available() == 0;
			}

			@Override
			public boolean isReady() {
				return true;
			}

			@Override
			public void setReadListener(ReadListener listener) {
				throw new UnsupportedOperationException("The body of an idempotent request was read already");
			}

		};
	}

	@Override
	public BufferedReader getReader() throws IOException {
		if (this.form) {
			return super.getReader();
		}
		String encoding = getCharacterEncoding();
		Charset charset = (encoding != null) ? Charset.forName(encoding) : StandardCharsets.ISO_8859_1;
		return new BufferedReader(new InputStreamReader(getInputStream(), charset));
	}

	/**
	 * A request body larger than the fingerprint reads.
	 */
	static final class RequestTooLargeException extends RuntimeException {

		private static final long serialVersionUID = 1L;

		RequestTooLargeException(long size, long maxSize) {
			super("The request body " + ((size >= 0) ? "has " + size + " bytes, more" : "is larger") + " than the "
					+ maxSize + " bytes an idempotent request may have (idempotency.web.max-request-size)");
		}

	}

}
