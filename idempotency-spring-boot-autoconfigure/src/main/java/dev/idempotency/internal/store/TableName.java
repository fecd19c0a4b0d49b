package dev.idempotency.internal.store;

import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * A table name from configuration, validated as a plain SQL identifier (optionally
 * qualified by a schema) before it is formatted into SQL.
 *
 * @param schema the schema, or {@code null} for the connection's default
 * @param table the table
 */
public record TableName(@Nullable String schema, String table) {

	private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

	/**
	 * Create a validated table name.
	 * @param schema the schema, or {@code null} or empty for the connection's default
	 * @param table the table
	 * @throws IllegalArgumentException if either part is not a plain SQL identifier
	 */
	public TableName {
		if (schema != null && schema.isEmpty()) {
			schema = null;
		}
		if (schema != null) {
			requireIdentifier(schema, "schema");
		}
		requireIdentifier(table, "table");
	}

	/**
	 * Return the name to use in SQL, qualified by the schema when one is set.
	 * @return the qualified name
	 */
	public String qualified() {
		return (this.schema != null) ? this.schema + "." + this.table : this.table;
	}

	@Override
	public String toString() {
		return qualified();
	}

	/**
	 * Check that a configured value is a plain SQL identifier.
	 * @param value the value
	 * @param what what the value names, for the error message
	 * @return the value
	 * @throws IllegalArgumentException if it is not
	 */
	public static String requireIdentifier(@Nullable String value, String what) {
		if (value == null || value.length() > 63 || !IDENTIFIER.matcher(value).matches()) {
			throw new IllegalArgumentException("Invalid " + what + " name '" + value
					+ "': expected a plain SQL identifier matching [A-Za-z_][A-Za-z0-9_]* of at most 63 characters");
		}
		return value;
	}

}
