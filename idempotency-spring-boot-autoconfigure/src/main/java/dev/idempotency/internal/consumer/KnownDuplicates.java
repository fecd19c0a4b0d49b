package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import dev.idempotency.internal.key.RecordCoordinates;
import dev.idempotency.metrics.DecisionSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.framework.Advised;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.DirectFieldAccessor;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.CompositeRecordInterceptor;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.ContainerProperties.AckMode;
import org.springframework.kafka.listener.DelegatingMessageListener;
import org.springframework.kafka.listener.RecordInterceptor;
import org.springframework.kafka.listener.adapter.HandlerAdapter;
import org.springframework.kafka.listener.adapter.MessagingMessageListenerAdapter;
import org.springframework.kafka.listener.adapter.RecordMessagingMessageListenerAdapter;
import org.springframework.messaging.handler.invocation.InvocableHandlerMethod;

/**
 * Skips, before the listener is invoked, a record whose key the poll's lookup (the
 * cache's, or the store's table's) found processed: the container acknowledges it as a
 * record its interceptor filtered out, and the listener adapter, the method's proxy and
 * its observation are not reached. The skips of a poll are counted together.
 * <p>
 * Installed on a container only where that skip is the one the interceptor would make:
 * its listener is a {@code @KafkaListener} method of its own (not a class-level listener
 * choosing among handlers, nor a listener of the application's that calls the method),
 * whose bean the starter's advisor intercepts and whose plan looks keys up that depend on
 * the record alone; the container acknowledges records itself (no manual acknowledgment:
 * the listener would have acknowledged the duplicate) and runs no transaction of its own.
 * Any other container delivers every record, and the interceptor decides as before.
 */
final class KnownDuplicates implements RecordInterceptor<Object, Object> {

	// logged as the interceptor's, the category applications already configure for the record path
	private static final Log logger = LogFactory.getLog(IdempotentListenerInterceptor.class);

	private static final String ADAPTER_HANDLER_FIELD = "handlerMethod";

	private static final String HANDLER_METHOD_FIELD = "invokerHandlerMethod";

	/**
	 * The fields read, by the type that declares them (see {@link ListenerRuntimeHints}):
	 * the listener adapter's handler and the handler's method have no getters.
	 */
	static final Map<Class<?>, List<String>> FIELDS_READ = Map.of(MessagingMessageListenerAdapter.class,
			List.of(ADAPTER_HANDLER_FIELD), HandlerAdapter.class, List.of(HANDLER_METHOD_FIELD));

	private final IdempotentListenerInterceptor interceptor;

	private final Method method;

	private final Class<?> targetClass;

	private KnownDuplicates(IdempotentListenerInterceptor interceptor, Method method, Class<?> targetClass) {
		this.interceptor = interceptor;
		this.method = method;
		this.targetClass = targetClass;
	}

	/**
	 * Put the skip of known duplicates after the container's record interceptors, where it
	 * applies.
	 * @param container a container the factory has just created and customized
	 * @param interceptors supplies the starter's interceptor, or {@code null} when there is
	 * none
	 */
	static void install(AbstractMessageListenerContainer<?, ?> container,
			Supplier<@Nullable IdempotentListenerInterceptor> interceptors) {
		InvocableHandlerMethod handler = handler(container.getContainerProperties());
		if (handler == null || !advisedByStarter(handler.getBean())) {
			return;
		}
		IdempotentListenerInterceptor interceptor = interceptors.get();
		if (interceptor == null) {
			return;
		}
		Class<?> targetClass = AopUtils.getTargetClass(handler.getBean());
		Method method = AopUtils.getMostSpecificMethod(handler.getMethod(), targetClass);
		if (!interceptor.skipsBeforeInvocation(method, targetClass)) {
			return;
		}
		install(container, new KnownDuplicates(interceptor, method, targetClass));
	}

	@SuppressWarnings({ "unchecked", "rawtypes" })
	private static void install(AbstractMessageListenerContainer container, KnownDuplicates skip) {
		RecordInterceptor<Object, Object> existing = container.getRecordInterceptor();
		container.setRecordInterceptor((existing != null) ? new CompositeRecordInterceptor<>(existing, skip) : skip);
	}

	/**
	 * Return the listener method a container invokes for every record, or {@code null}
	 * when it is not one method of a {@code @KafkaListener} endpoint or the container
	 * acknowledges or transacts in a way the skip must not bypass.
	 */
	private static @Nullable InvocableHandlerMethod handler(ContainerProperties properties) {
		if (properties.getAckMode() == AckMode.MANUAL || properties.getAckMode() == AckMode.MANUAL_IMMEDIATE
				|| properties.getTransactionManager() != null
				|| properties.getKafkaAwareTransactionManager() != null) {
			return null;
		}
		Object listener = properties.getMessageListener();
		// spring-kafka's own wrappers (a record filter, the retry topics' back-off) only
		// decide whether and when the record reaches the method
		while (listener instanceof DelegatingMessageListener<?> delegating
				&& listener.getClass().getName().startsWith("org.springframework.kafka.")) {
			listener = delegating.getDelegate();
		}
		if (!(listener instanceof RecordMessagingMessageListenerAdapter<?, ?> adapter)) {
			return null;
		}
		DirectFieldAccessor adapterFields = new DirectFieldAccessor(adapter);
		if (!adapterFields.isReadableProperty(ADAPTER_HANDLER_FIELD)
				|| !(adapterFields.getPropertyValue(ADAPTER_HANDLER_FIELD) instanceof HandlerAdapter handler)) {
			return null;
		}
		DirectFieldAccessor handlerFields = new DirectFieldAccessor(handler);
		// null for a class-level @KafkaListener, which chooses a handler per payload
		return (handlerFields.isReadableProperty(HANDLER_METHOD_FIELD)
				&& handlerFields.getPropertyValue(HANDLER_METHOD_FIELD) instanceof InvocableHandlerMethod method)
				? method : null;
	}

	private static boolean advisedByStarter(Object bean) {
		if (!(bean instanceof Advised advised)) {
			return false;
		}
		for (var advisor : advised.getAdvisors()) {
			if (advisor instanceof IdempotentListenerAdvisor) {
				return true;
			}
		}
		return false;
	}

	@Override
	public @Nullable ConsumerRecord<Object, Object> intercept(ConsumerRecord<Object, Object> record,
			Consumer<Object, Object> consumer) {
		ListenerPlan plan = this.interceptor.plan(this.method, this.targetClass);
		DecisionSource known;
		try {
			known = plan.knownDuplicate(record);
		}
		catch (RuntimeException ex) {
			// only a hint: the listener's invocation looks the key up again, and decides
			known = null;
		}
		if (known == null) {
			PollPrefetch.delivered(record);
			return record;
		}
		PollPrefetch.skipped(plan.metrics(), known, record);
		if (logger.isDebugEnabled()) {
			logger.debug("Skipped duplicate " + RecordCoordinates.describe(record) + " for " + plan.method().name()
					+ " (" + known.tag() + ") before invoking it");
		}
		return null;
	}

}
