package dev.idempotency.internal.web;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.concurrent.Future;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.key.KeyExpressions;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.ResolvableType;
import org.springframework.expression.Expression;
import org.springframework.http.HttpEntity;
import org.springframework.util.ClassUtils;
import org.springframework.web.context.request.async.DeferredResult;
import org.springframework.web.context.request.async.WebAsyncTask;
import org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;

/**
 * What the filter does for the requests of one {@code @Idempotent} handler method, read
 * once from its annotation: the key expression, the scope, the mode and the lease.
 *
 * @param name the handler, as {@code Controller.method}, for messages
 * @param mode the mode
 * @param lease the lease of each claim in lease mode
 * @param key the key expression, or {@code null} to read the key header
 * @param scope the scope the annotation names, or {@code null} for the endpoint's
 */
record EndpointPlan(String name, Idempotent.Mode mode, Duration lease, @Nullable Expression key,
		@Nullable String scope) {

	// return types whose response is written after the handler returned, or streamed
	private static final List<Class<?>> UNSTORABLE = List.of(ResponseBodyEmitter.class, StreamingResponseBody.class,
			DeferredResult.class, WebAsyncTask.class, Callable.class, CompletionStage.class, Future.class,
			Flow.Publisher.class);

	private static final String REACTIVE_PUBLISHER = "org.reactivestreams.Publisher";

	/**
	 * Read the plan of a handler method, and check that its response can be stored.
	 * @param method the handler method
	 * @param idempotent its annotation
	 * @param settings the settings
	 * @return the plan
	 * @throws IllegalStateException with a message that names the method, if it cannot be
	 * an idempotent handler
	 */
	static EndpointPlan of(Method method, Idempotent idempotent, WebSettings settings) {
		String name = ClassUtils.getUserClass(method.getDeclaringClass()).getSimpleName() + "." + method.getName();
		Class<?> unstorable = unstorable(ResolvableType.forMethodReturnType(method));
		if (unstorable != null) {
			throw new IllegalStateException("@Idempotent handler " + name + " returns " + unstorable.getSimpleName()
					+ ": a response that is streamed or written after the handler returns cannot be stored with its "
					+ "claim and replayed. Return the response itself (a body or a ResponseEntity)");
		}
		if (!idempotent.fingerprintExpression().isEmpty() || idempotent.nonRetryable().length > 0) {
			throw new IllegalStateException("@Idempotent handler " + name + " sets fingerprintExpression or "
					+ "nonRetryable, which HTTP handlers do not support: every request is fingerprinted by its method, "
					+ "path, body and idempotency.web.fingerprint-headers, and an exception releases the key");
		}
		Duration lease = settings.lease();
		if (!idempotent.lease().isEmpty()) {
			try {
				lease = DurationStyle.detectAndParse(idempotent.lease());
			}
			catch (RuntimeException ex) {
				throw new IllegalStateException("@Idempotent handler " + name + " has a lease that is not a duration: '"
						+ idempotent.lease() + "'", ex);
			}
			if (idempotent.mode() != Idempotent.Mode.LEASE || lease.isNegative() || lease.isZero()) {
				throw new IllegalStateException("@Idempotent handler " + name + " sets lease '" + idempotent.lease()
						+ "': a positive lease, in mode LEASE only");
			}
		}
		Expression key = null;
		if (!idempotent.key().isEmpty()) {
			try {
				key = KeyExpressions.parse(idempotent.key());
			}
			catch (RuntimeException ex) {
				throw new IllegalStateException("@Idempotent handler " + name + " has a key expression that does not "
						+ "parse: " + ex.getMessage(), ex);
			}
		}
		return new EndpointPlan(name, idempotent.mode(), lease, key,
				idempotent.scope().isEmpty() ? null : idempotent.scope());
	}

	private static @Nullable Class<?> unstorable(ResolvableType type) {
		Class<?> raw = type.resolve(Object.class);
		if (HttpEntity.class.isAssignableFrom(raw)) {
			return unstorable(type.as(HttpEntity.class).getGeneric(0));
		}
		for (Class<?> candidate : UNSTORABLE) {
			if (candidate.isAssignableFrom(raw)) {
				return raw;
			}
		}
		for (Class<?> implemented : ClassUtils.getAllInterfacesForClassAsSet(raw)) {
			if (implemented.getName().equals(REACTIVE_PUBLISHER)) {
				return raw;
			}
		}
		return null;
	}

}
