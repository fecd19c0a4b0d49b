package dev.idempotency.internal.key;

import java.nio.ByteBuffer;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.SimpleEvaluationContext;

/**
 * Parses and evaluates {@code @Idempotent(key = "...")} expressions. Evaluation is limited
 * to read-only property access and instance methods on the {@link KeyExpressionRoot}.
 */
public final class KeyExpressions {

	private static final SpelExpressionParser PARSER = new SpelExpressionParser();

	private static final ClassValue<Boolean> HAS_OWN_TO_STRING = new ClassValue<>() {

		@Override
		protected Boolean computeValue(Class<?> type) {
			try {
				return type.getMethod("toString").getDeclaringClass() != Object.class;
			}
			catch (NoSuchMethodException ex) {
				return false;
			}
		}

	};

	private KeyExpressions() {
	}

	/**
	 * Parse a key expression.
	 * @param expression the expression text
	 * @return the parsed expression
	 * @throws IllegalArgumentException if the text is not a valid expression
	 */
	public static Expression parse(String expression) {
		try {
			return PARSER.parseExpression(expression);
		}
		catch (ParseException ex) {
			throw new IllegalArgumentException("Invalid key expression '" + expression + "': " + ex.getMessage(),
					ex);
		}
	}

	static @Nullable String evaluate(Expression expression, ConsumerRecord<?, ?> record, @Nullable Object payload) {
		KeyExpressionRoot root = new KeyExpressionRoot(record, payload);
		EvaluationContext context = SimpleEvaluationContext.forReadOnlyDataBinding()
			.withInstanceMethods()
			.withRootObject(root)
			.build();
		Object value = expression.getValue(context);
		return (value != null) ? text(value, expression) : null;
	}

	/**
	 * Return the value of a key expression as a key: bytes by their content, as a key
	 * header is read, anything else by a {@code toString} of its own. Text that would be
	 * the value's identity ({@code Object}'s {@code toString}, an array's) is refused: two
	 * copies of a message would get different keys.
	 */
	private static String text(Object value, Expression expression) {
		if (value instanceof String text) {
			return text;
		}
		if (value instanceof byte[] bytes) {
			return HeaderKeys.text(bytes);
		}
		if (value instanceof ByteBuffer buffer) {
			byte[] bytes = new byte[buffer.remaining()];
			buffer.duplicate().get(bytes);
			return HeaderKeys.text(bytes);
		}
		if (!HAS_OWN_TO_STRING.get(value.getClass())) {
			throw new IllegalArgumentException("The key expression '" + expression.getExpressionString()
					+ "' gave a " + value.getClass().getTypeName() + ", which has no toString of its own: its text "
					+ "would be its identity, different for every copy of a message. Make the expression give a "
					+ "String, a number or bytes");
		}
		return value.toString();
	}

}
