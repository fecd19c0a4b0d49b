package dev.idempotency.internal.outbox;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads the text form of the outbox's {@code headers} column, a flat JSON object as
 * PostgreSQL prints a {@code jsonb} value: string values are unescaped, any other value
 * is kept as its JSON text (as {@code jsonb_each_text} gives it to the table relay).
 */
final class HeadersJson {

	private final String text;

	private int position;

	private HeadersJson(String text) {
		this.text = text;
	}

	/**
	 * Parse a flat JSON object.
	 * @param text the object's text
	 * @return its members, in their order in the text
	 * @throws IllegalArgumentException if the text is not a flat JSON object
	 */
	static Map<String, String> parse(String text) {
		return new HeadersJson(text).object();
	}

	private Map<String, String> object() {
		Map<String, String> members = new LinkedHashMap<>();
		expect('{');
		skipSpaces();
		if (peek() == '}') {
			return members;
		}
		while (true) {
			skipSpaces();
			String name = string();
			skipSpaces();
			expect(':');
			skipSpaces();
			members.put(name, (peek() == '"') ? string() : scalar());
			skipSpaces();
			char next = next();
			if (next == '}') {
				return members;
			}
			if (next != ',') {
				throw invalid("',' or '}'");
			}
		}
	}

	private String string() {
		expect('"');
		StringBuilder value = new StringBuilder();
		while (true) {
			char c = next();
			if (c == '"') {
				return value.toString();
			}
			if (c != '\\') {
				value.append(c);
				continue;
			}
			char escaped = next();
			switch (escaped) {
				case 'b' -> value.append('\b');
				case 'f' -> value.append('\f');
				case 'n' -> value.append('\n');
				case 'r' -> value.append('\r');
				case 't' -> value.append('\t');
				case 'u' -> {
					if (this.position + 4 > this.text.length()) {
						throw invalid("four hex digits");
					}
					value.append((char) Integer.parseInt(this.text.substring(this.position, this.position + 4), 16));
					this.position += 4;
				}
				default -> value.append(escaped);
			}
		}
	}

	// a number, true, false or null: up to the next separator
	private String scalar() {
		int start = this.position;
		while (this.position < this.text.length() && ",}".indexOf(this.text.charAt(this.position)) < 0) {
			this.position++;
		}
		return this.text.substring(start, this.position).trim();
	}

	private void skipSpaces() {
		while (this.position < this.text.length() && Character.isWhitespace(this.text.charAt(this.position))) {
			this.position++;
		}
	}

	private char peek() {
		if (this.position >= this.text.length()) {
			throw invalid("more");
		}
		return this.text.charAt(this.position);
	}

	private char next() {
		char c = peek();
		this.position++;
		return c;
	}

	private void expect(char expected) {
		if (next() != expected) {
			throw invalid("'" + expected + "'");
		}
	}

	private IllegalArgumentException invalid(String expected) {
		return new IllegalArgumentException("Not a flat JSON object: expected " + expected + " at " + this.position);
	}

}
