package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.key.KeyExpressionRoot;
import dev.idempotency.test.StarterRuntimeHints;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.predicate.ReflectionHintsPredicates;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.listener.CommonDelegatingErrorHandler;
import org.springframework.kafka.listener.CommonMixedErrorHandler;
import org.springframework.kafka.listener.adapter.HandlerAdapter;
import org.springframework.kafka.listener.adapter.MessagingMessageListenerAdapter;
import org.springframework.kafka.retrytopic.ListenerContainerFactoryConfigurer;
import org.springframework.kafka.retrytopic.RetryTopicConfigurer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hints a native image needs for what the listener support reads by reflection: the
 * fields of spring-kafka types that have no getter, the annotation's attributes, and what
 * a key expression reads.
 */
class ListenerRuntimeHintsUnitTests {

	private static final ReflectionHintsPredicates reflection = RuntimeHintsPredicates.reflection();

	private final RuntimeHints hints = StarterRuntimeHints.registered();

	@Test
	void theFieldsReadFromSpringKafkaCanBeRead() {
		// each predicate also fails when spring-kafka renamed the field
		assertThat(reflection.onFieldAccess(AbstractKafkaListenerContainerFactory.class, "recordFilterStrategy"))
			.accepts(this.hints);
		assertThat(reflection.onFieldAccess(AbstractKafkaListenerContainerFactory.class, "containerCustomizer"))
			.accepts(this.hints);
		assertThat(reflection.onFieldAccess(RetryTopicConfigurer.class, "listenerContainerFactoryConfigurer"))
			.accepts(this.hints);
		assertThat(reflection.onFieldAccess(ListenerContainerFactoryConfigurer.class, "containerCustomizer"))
			.accepts(this.hints);
		assertThat(reflection.onFieldAccess(CommonDelegatingErrorHandler.class, "defaultErrorHandler"))
			.accepts(this.hints);
		assertThat(reflection.onFieldAccess(CommonDelegatingErrorHandler.class, "delegates")).accepts(this.hints);
		assertThat(reflection.onFieldAccess(CommonMixedErrorHandler.class, "recordErrorHandler")).accepts(this.hints);
		assertThat(reflection.onFieldAccess(CommonMixedErrorHandler.class, "batchErrorHandler")).accepts(this.hints);
		assertThat(reflection.onFieldAccess(MessagingMessageListenerAdapter.class, "handlerMethod"))
			.accepts(this.hints);
		assertThat(reflection.onFieldAccess(HandlerAdapter.class, "invokerHandlerMethod")).accepts(this.hints);
	}

	@Test
	void registersNothingWithoutSpringKafka() {
		RuntimeHints hints = new RuntimeHints();
		new ListenerRuntimeHints().registerHints(hints, new FilteredClassLoader(KafkaListener.class));
		assertThat(hints.reflection().typeHints()).isEmpty();
	}

	@Test
	void onlyTheFieldsItReadsAreOpened() {
		assertThat(reflection.onFieldAccess(AbstractKafkaListenerContainerFactory.class, "commonErrorHandler"))
			.rejects(this.hints);
		assertThat(reflection.onType(AbstractKafkaListenerContainerFactory.class)
			.withMemberCategory(MemberCategory.ACCESS_DECLARED_FIELDS)).rejects(this.hints);
	}

	@Test
	void theAttributesOfTheAnnotationCanBeRead() {
		for (Method attribute : Idempotent.class.getDeclaredMethods()) {
			assertThat(reflection.onMethodInvocation(attribute)).as(attribute.getName()).accepts(this.hints);
		}
	}

	@Test
	void aKeyExpressionCanReadTheRootAndTheRecord() {
		for (Class<?> type : new Class<?>[] { KeyExpressionRoot.class, ConsumerRecord.class, RecordHeaders.class,
				RecordHeader.class }) {
			Arrays.stream(type.getDeclaredMethods())
				.filter((method) -> Modifier.isPublic(method.getModifiers()))
				.filter((method) -> !Modifier.isStatic(method.getModifiers()))
				.forEach((method) -> assertThat(reflection.onMethodInvocation(method)).as(method.toString())
					.accepts(this.hints));
		}
	}

}
