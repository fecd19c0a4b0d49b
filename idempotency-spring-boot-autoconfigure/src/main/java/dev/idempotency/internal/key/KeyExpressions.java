package dev.idempotency.internal.key;

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
		return (value != null) ? value.toString() : null;
	}

}
