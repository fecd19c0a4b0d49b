package dev.idempotency.internal.web;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import jakarta.servlet.http.HttpServletResponse;

/**
 * A response as it is stored with its claim and replayed: the status, the headers that
 * belong to the representation, and the body, byte for byte (Base64 in the stored JSON).
 *
 * @param status the status code
 * @param headers the stored headers, by lower-case name
 * @param body the body, Base64-encoded
 */
record StoredResponse(int status, Map<String, List<String>> headers, String body) {

	/**
	 * The header that marks a replayed response.
	 */
	static final String REPLAYED = "Idempotent-Replayed";

	/**
	 * Capture a buffered response.
	 * @param response the response, with its body buffered
	 * @param names the names of the headers to store, in lower case
	 * @return the stored form
	 */
	static StoredResponse of(BufferedResponse response, List<String> names) {
		Map<String, List<String>> headers = new LinkedHashMap<>();
		for (String name : names) {
			List<String> values = new ArrayList<>();
			if (name.equals("content-type")) {
				// the container keeps the content type apart from the other headers
				if (response.getContentType() != null) {
					values.add(response.getContentType());
				}
			}
			else {
				values.addAll(response.getHeaders(name));
			}
			if (!values.isEmpty()) {
				headers.put(name, values);
			}
		}
		return new StoredResponse(response.getStatus(), headers,
				Base64.getEncoder().encodeToString(response.getContentAsByteArray()));
	}

	/**
	 * Write the stored response, marked as replayed.
	 * @param response the response to the retried request
	 * @throws IOException if writing fails
	 */
	void replay(HttpServletResponse response) throws IOException {
		response.setStatus(this.status);
		this.headers.forEach((name, values) -> {
			if (name.equals("content-type")) {
				response.setContentType(values.get(0));
			}
			else {
				values.forEach((value) -> response.addHeader(name, value));
			}
		});
		response.setHeader(REPLAYED, "true");
		byte[] bytes = Base64.getDecoder().decode(this.body);
		response.setContentLength(bytes.length);
		response.getOutputStream().write(bytes);
		response.flushBuffer();
	}

}
