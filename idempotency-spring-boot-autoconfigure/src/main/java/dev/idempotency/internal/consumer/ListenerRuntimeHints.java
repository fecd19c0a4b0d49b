package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.Map;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.key.KeyExpressionRoot;
import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.ReflectionHints;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.util.ClassUtils;

/**
 * What a native image of an application with {@code @Idempotent} listeners needs: the
 * fields of spring-kafka types that the starter reads because they have no getter (each
 * field alone), the attributes of {@link Idempotent}, and what a key expression may read
 * (the {@link KeyExpressionRoot}, the record and its headers; the classes of payloads are
 * the application's to register). The proxies of listener beans are generated ahead of
 * time by Spring's auto-proxy creator, those of {@code KafkaListenerErrorHandler} beans
 * by {@link ListenerErrorHandlerPostProcessor#determineBeanType}.
 */
final class ListenerRuntimeHints implements RuntimeHintsRegistrar {

	private static final String KAFKA_LISTENER = "org.springframework.kafka.annotation.KafkaListener";

	private static final List<String> KEY_EXPRESSION_TYPES = List.of(
			"org.apache.kafka.clients.consumer.ConsumerRecord",
			"org.apache.kafka.common.header.internals.RecordHeaders",
			"org.apache.kafka.common.header.internals.RecordHeader");

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		if (!ClassUtils.isPresent(KAFKA_LISTENER, classLoader)) {
			return;
		}
		ReflectionHints reflection = hints.reflection();
		fields(reflection, ListenerContainerFactoryPostProcessor.FIELDS_READ);
		fields(reflection, InfrastructureRetryInstaller.DELEGATE_FIELDS);
		fields(reflection, KnownDuplicates.FIELDS_READ);
		reflection.registerType(Idempotent.class, MemberCategory.INVOKE_PUBLIC_METHODS);
		reflection.registerType(KeyExpressionRoot.class, MemberCategory.INVOKE_PUBLIC_METHODS);
		for (String type : KEY_EXPRESSION_TYPES) {
			reflection.registerTypeIfPresent(classLoader, type, MemberCategory.INVOKE_PUBLIC_METHODS);
		}
	}

	private static void fields(ReflectionHints reflection, Map<Class<?>, List<String>> fieldsByType) {
		fieldsByType.forEach((type, fields) -> reflection.registerType(type, (hint) -> fields.forEach(hint::withField)));
	}

}
