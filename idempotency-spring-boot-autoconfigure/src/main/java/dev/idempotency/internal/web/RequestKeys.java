package dev.idempotency.internal.web;

import java.util.Collections;
import java.util.List;

import jakarta.servlet.http.HttpServletRequest;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.Expression;

/**
 * Reads the idempotency key of a request: the value of the key header, in the plain form
 * most clients send ({@code Idempotency-Key: 8e03978e-40d5}) or as the structured-field
 * string of the IETF draft ({@code Idempotency-Key: "8e03978e-40d5"}), or the value of the
 * handler's key expression.
 */
final class RequestKeys {

	private RequestKeys() {
	}

	/**
	 * Return the key of a request.
	 * @param request the request
	 * @param settings the key header and the longest key
	 * @param expression the handler's key expression, or {@code null} to read the header
	 * @return the key, or {@code null} if the request has none
	 * @throws InvalidRequestKeyException if the key is malformed, too long or has control
	 * characters
	 */
	static @Nullable String of(HttpServletRequest request, WebSettings settings, @Nullable Expression expression) {
		String key = (expression != null) ? evaluate(expression, request) : header(request, settings.keyHeader());
		if (key == null) {
			return null;
		}
		if (key.isEmpty()) {
			throw new InvalidRequestKeyException("The " + what(expression, settings) + " is empty");
		}
		if (key.length() > settings.maxKeyLength()) {
			throw new InvalidRequestKeyException("The " + what(expression, settings) + " has " + key.length()
					+ " characters, more than the " + settings.maxKeyLength() + " accepted");
		}
		for (int i = 0; i < key.length(); i++) {
			if (Character.isISOControl(key.charAt(i))) {
				throw new InvalidRequestKeyException("The " + what(expression, settings)
						+ " has a control character at position " + i);
			}
		}
		return key;
	}

	private static String what(@Nullable Expression expression, WebSettings settings) {
		return (expression != null) ? "idempotency key" : settings.keyHeader() + " header";
	}

	private static @Nullable String header(HttpServletRequest request, String name) {
		List<String> values = Collections.list(request.getHeaders(name));
		if (values.isEmpty()) {
			return null;
		}
		if (values.size() > 1) {
			throw new InvalidRequestKeyException("The request has " + values.size() + " " + name
					+ " headers; send one");
		}
		String value = values.get(0).strip();
		return value.startsWith("\"") ? structuredString(value, name) : value;
	}

	/**
	 * Return the content of a structured-field string (RFC 8941, section 3.3.3): printable
	 * ASCII between double quotes, with {@code \"} and {@code \\} as the only escapes.
	 */
	static String structuredString(String value, String name) {
		StringBuilder key = new StringBuilder(value.length());
		for (int i = 1; i < value.length(); i++) {
			char c = value.charAt(i);
			if (c == '\\') {
				char next = (i + 1 < value.length()) ? value.charAt(i + 1) : 0;
				if (next != '"' && next != '\\') {
					throw malformed(name, "a backslash that escapes neither '\"' nor '\\'");
				}
				key.append(next);
				i++;
			}
			else if (c == '"') {
				// an item may carry parameters (";name=value"), which do not change the key
				if (i != value.length() - 1 && value.charAt(i + 1) != ';') {
					throw malformed(name, "text after its closing quote");
				}
				return key.toString();
			}
			else if (c < 0x20 || c > 0x7E) {
				throw malformed(name, "a character that is not printable ASCII at position " + i);
			}
			else {
				key.append(c);
			}
		}
		throw malformed(name, "no closing quote");
	}

	private static InvalidRequestKeyException malformed(String name, String what) {
		return new InvalidRequestKeyException("The " + name + " header is a malformed quoted string: it has " + what);
	}

	private static @Nullable String evaluate(Expression expression, HttpServletRequest request) {
		Object value;
		try {
			value = expression.getValue(new RequestKeyRoot(request));
		}
		catch (RuntimeException ex) {
			throw new InvalidRequestKeyException("The idempotency key expression '"
					+ expression.getExpressionString() + "' failed on this request: " + ex.getMessage());
		}
		return (value != null) ? value.toString() : null;
	}

	/**
	 * A request whose idempotency key cannot be used.
	 */
	static final class InvalidRequestKeyException extends RuntimeException {

		private static final long serialVersionUID = 1L;

		InvalidRequestKeyException(String message) {
			super(message);
		}

	}

}
