package dev.idempotency;

import java.lang.reflect.Type;

import org.jspecify.annotations.Nullable;

/**
 * Writes the return values of {@code @Idempotent(storeResult = true)} methods as JSON and
 * reads them back as the method's return type. The starter provides one on the
 * application's Jackson {@code JsonMapper}; never Java serialization.
 */
public interface StoredResultCodec {

	/**
	 * Write a value as JSON.
	 * @param value the value
	 * @return the JSON text
	 */
	String write(Object value);

	/**
	 * Read a value back.
	 * @param json the JSON text
	 * @param type the type to read it as
	 * @return the value
	 */
	@Nullable Object read(String json, Type type);

}
