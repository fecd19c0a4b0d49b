package dev.idempotency.internal.web;

import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.util.ClassUtils;

/**
 * What a native image of an application with {@code @Idempotent} HTTP handlers needs: the
 * stored response, which is written and read as JSON, and what a handler's key expression
 * may read ({@link RequestKeyRoot}).
 */
final class WebRuntimeHints implements RuntimeHintsRegistrar {

	private static final String DISPATCHER_SERVLET = "org.springframework.web.servlet.DispatcherServlet";

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		if (!ClassUtils.isPresent(DISPATCHER_SERVLET, classLoader)) {
			return;
		}
		hints.reflection()
			.registerType(StoredResponse.class, MemberCategory.INVOKE_DECLARED_CONSTRUCTORS,
					MemberCategory.INVOKE_DECLARED_METHODS, MemberCategory.ACCESS_DECLARED_FIELDS)
			.registerType(RequestKeyRoot.class, MemberCategory.INVOKE_PUBLIC_METHODS);
	}

}
