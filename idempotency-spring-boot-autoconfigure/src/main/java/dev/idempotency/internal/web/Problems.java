package dev.idempotency.internal.web;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.idempotency.StoredResultCodec;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;

/**
 * Writes the answers of the idempotency rules as RFC 9457 problem details: the standard
 * members, and a {@code code} that names the rule.
 */
final class Problems {

	private final StoredResultCodec json;

	Problems(StoredResultCodec json) {
		this.json = json;
	}

	/**
	 * Write a problem detail, unless the response was committed already.
	 * @param request the request
	 * @param response the response
	 * @param problem the problem
	 * @param detail what went wrong with this request
	 * @throws IOException if writing fails
	 */
	void write(HttpServletRequest request, HttpServletResponse response, Problem problem, String detail)
			throws IOException {
		if (response.isCommitted()) {
			return;
		}
		// the headers of a response the handler wrote and that is not sent go too
		response.reset();
		Map<String, Object> body = new LinkedHashMap<>();
		body.put("type", "about:blank");
		body.put("title", problem.status.getReasonPhrase());
		body.put("status", problem.status.value());
		body.put("detail", detail);
		body.put("instance", request.getRequestURI());
		body.put("code", problem.code);
		byte[] bytes = this.json.write(body).getBytes(StandardCharsets.UTF_8);
		response.setStatus(problem.status.value());
		response.setContentType(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
		response.setContentLength(bytes.length);
		response.getOutputStream().write(bytes);
		response.flushBuffer();
	}

	/**
	 * The rules of the IETF draft "The Idempotency-Key HTTP Header Field", and the limits of
	 * what can be stored, each with its status.
	 */
	enum Problem {

		/** The endpoint requires a key and the request has none. */
		KEY_MISSING(HttpStatus.BAD_REQUEST, "idempotency-key-missing"),

		/** The key is malformed, too long or has control characters. */
		KEY_INVALID(HttpStatus.BAD_REQUEST, "idempotency-key-invalid"),

		/** The key was used for another request (method, path, body or headers). */
		KEY_REUSED(HttpStatus.UNPROCESSABLE_CONTENT, "idempotency-key-reused"),

		/** A request with the key is still being processed. */
		IN_PROGRESS(HttpStatus.CONFLICT, "idempotency-key-in-progress"),

		/** The request body is larger than the fingerprint reads. */
		REQUEST_TOO_LARGE(HttpStatus.CONTENT_TOO_LARGE, "idempotent-request-too-large"),

		/** The response could not be stored, so the request's effects were not kept. */
		RESPONSE_NOT_STORED(HttpStatus.INTERNAL_SERVER_ERROR, "idempotent-response-not-stored");

		private final HttpStatus status;

		private final String code;

		Problem(HttpStatus status, String code) {
			this.status = status;
			this.code = code;
		}

	}

}
