package dev.idempotency.internal.key;

import java.nio.ByteBuffer;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.MethodReference;
import org.springframework.expression.spel.ast.PropertyOrFieldReference;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;
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

	/**
	 * Return whether a key expression may read the payload: whether its value may differ
	 * between the record's value and the payload the listener receives after conversion.
	 * Any reference to the root object as a whole ({@code #root}, {@code #this}) counts.
	 * @param expression the expression text
	 * @return {@code false} only when the key depends on the record alone
	 * @throws IllegalArgumentException if the text is not a valid expression
	 */
	public static boolean readsPayload(String expression) {
		return !(parse(expression) instanceof SpelExpression spel) || readsPayload(spel.getAST());
	}

	private static boolean readsPayload(SpelNode node) {
		if ((node instanceof PropertyOrFieldReference property && property.getName().equals("payload"))
				|| (node instanceof MethodReference method && method.getName().equals("getPayload"))
				|| node instanceof VariableReference) {
			return true;
		}
		for (int i = 0; i < node.getChildCount(); i++) {
			if (readsPayload(node.getChild(i))) {
				return true;
			}
		}
		return false;
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
