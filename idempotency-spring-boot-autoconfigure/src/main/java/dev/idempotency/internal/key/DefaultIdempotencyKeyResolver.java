package dev.idempotency.internal.key;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.InboundMessage;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;

import org.springframework.expression.Expression;

/**
 * The default {@link IdempotencyKeyResolver}: the method's
 * {@link dev.idempotency.Idempotent#key() key expression} when it has one, else the value
 * of the key header.
 */
public final class DefaultIdempotencyKeyResolver implements IdempotencyKeyResolver {

	private final String headerName;

	// per method, worked out at its first record: its parsed key expression, or HEADER
	private final Map<Method, Object> keySources = new ConcurrentHashMap<>();

	private static final Object HEADER = new Object();

	/**
	 * Create a resolver that reads keys from the given header.
	 * @param headerName the name of the key header
	 */
	public DefaultIdempotencyKeyResolver(String headerName) {
		this.headerName = headerName;
	}

	@Override
	public @Nullable String resolve(InboundMessage message) {
		Object source = this.keySources.computeIfAbsent(message.method(), (method) -> {
			String expression = message.idempotent().key();
			return expression.isEmpty() ? HEADER : KeyExpressions.parse(expression);
		});
		if (source instanceof Expression parsed) {
			return KeyExpressions.evaluate(parsed, message.record(), message.payload());
		}
		Header header = message.record().headers().lastHeader(this.headerName);
		if (header == null || header.value() == null || header.value().length == 0) {
			return null;
		}
		return HeaderKeys.text(header.value());
	}

}
