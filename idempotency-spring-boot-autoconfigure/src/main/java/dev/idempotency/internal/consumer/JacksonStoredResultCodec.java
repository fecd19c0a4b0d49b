package dev.idempotency.internal.consumer;

import dev.idempotency.StoredResultCodec;

import java.lang.reflect.Type;

import org.jspecify.annotations.Nullable;
import tools.jackson.databind.ObjectMapper;

/**
 * {@link StoredResultCodec} on a Jackson 3 {@link ObjectMapper}.
 */
public final class JacksonStoredResultCodec implements StoredResultCodec {

	private final ObjectMapper mapper;

	/**
	 * Create a codec.
	 * @param mapper the application's mapper
	 */
	public JacksonStoredResultCodec(ObjectMapper mapper) {
		this.mapper = mapper;
	}

	@Override
	public String write(Object value) {
		return this.mapper.writeValueAsString(value);
	}

	@Override
	public @Nullable Object read(String json, Type type) {
		return this.mapper.readValue(json, this.mapper.getTypeFactory().constructType(type));
	}

}
