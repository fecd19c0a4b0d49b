package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.DirectFieldAccessor;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.config.ContainerCustomizer;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.BatchInterceptor;
import org.springframework.kafka.listener.CompositeBatchInterceptor;
import org.springframework.kafka.listener.CompositeRecordInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;
import org.springframework.kafka.listener.adapter.RecordFilterStrategy;
import org.springframework.kafka.retrytopic.ListenerContainerFactoryConfigurer;
import org.springframework.kafka.retrytopic.RetryTopicConfigurer;

/**
 * Adds the interceptors that bind the current record or batch to every Kafka listener
 * container factory, after any interceptor the application configured, and makes its
 * record filter (if any) bind the records of a batch that pass it. Containers the factory
 * creates once the application runs (for a lazily created listener bean, say), which the
 * {@link InfrastructureRetryInstaller} did not see when the registry started, get the
 * infrastructure retries as they are created, after the application's customizer; so do
 * the containers of retry topics created then, whose error handler the retry topics'
 * {@link ListenerContainerFactoryConfigurer} replaces after the factory's customizer ran.
 * Each container the factory creates for an {@code @Idempotent} {@code @KafkaListener}
 * method gets, after the application's customizer, the skip of {@link KnownDuplicates}
 * where it applies.
 */
public final class ListenerContainerFactoryPostProcessor implements BeanPostProcessor {

	private static final String FILTER_FIELD = "recordFilterStrategy";

	private static final String CUSTOMIZER_FIELD = "containerCustomizer";

	private static final String RETRY_TOPICS_CONFIGURER_FIELD = "listenerContainerFactoryConfigurer";

	/**
	 * The fields read, by the type that declares them (see {@link ListenerRuntimeHints}).
	 */
	static final Map<Class<?>, List<String>> FIELDS_READ = Map.of(AbstractKafkaListenerContainerFactory.class,
			List.of(FILTER_FIELD, CUSTOMIZER_FIELD), RetryTopicConfigurer.class, List.of(RETRY_TOPICS_CONFIGURER_FIELD),
			ListenerContainerFactoryConfigurer.class, List.of(CUSTOMIZER_FIELD));

	private final ObjectProvider<InfrastructureRetryInstaller> installers;

	private final ObjectProvider<IdempotentListenerInterceptor> interceptors;

	/**
	 * Create the post-processor.
	 * @param installers the installer of the infrastructure retries, if any
	 * @param interceptors the interceptor of {@code @Idempotent} listeners, if any
	 */
	public ListenerContainerFactoryPostProcessor(ObjectProvider<InfrastructureRetryInstaller> installers,
			ObjectProvider<IdempotentListenerInterceptor> interceptors) {
		this.installers = installers;
		this.interceptors = interceptors;
	}

	@Override
	@SuppressWarnings({ "unchecked", "rawtypes" })
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		if (bean instanceof RetryTopicConfigurer retryTopicConfigurer
				&& new DirectFieldAccessor(retryTopicConfigurer).isReadableProperty(RETRY_TOPICS_CONFIGURER_FIELD)
				&& new DirectFieldAccessor(retryTopicConfigurer)
					.getPropertyValue(RETRY_TOPICS_CONFIGURER_FIELD) instanceof ListenerContainerFactoryConfigurer retryTopics) {
			// it replaces the error handler of each container it decorates, then runs its
			// customizer (neither has a getter: the fields they are kept in are read)
			DirectFieldAccessor fields = new DirectFieldAccessor(retryTopics);
			if (fields.isReadableProperty(CUSTOMIZER_FIELD)
					&& !(fields.getPropertyValue(CUSTOMIZER_FIELD) instanceof LateRetryTopicContainerRetries)) {
				retryTopics.setContainerCustomizer(new LateRetryTopicContainerRetries(
						(Consumer) fields.getPropertyValue(CUSTOMIZER_FIELD), this.installers));
			}
		}
		if (bean instanceof AbstractKafkaListenerContainerFactory factory) {
			RecordInterceptor record = factory.getRecordInterceptor();
			if (!(record instanceof CurrentRecordInterceptor)) {
				RecordInterceptor binding = new CurrentRecordInterceptor();
				factory.setRecordInterceptor((record != null) ? new CompositeRecordInterceptor(record, binding) : binding);
			}
			// the factory has no getter for its filter: read the field it is kept in
			DirectFieldAccessor fields = new DirectFieldAccessor(factory);
			if (fields.isReadableProperty(FILTER_FIELD)
					&& fields.getPropertyValue(FILTER_FIELD) instanceof RecordFilterStrategy filter
					&& !(filter instanceof BindingRecordFilterStrategy)) {
				factory.setRecordFilterStrategy(new BindingRecordFilterStrategy(filter));
			}
			if (fields.isReadableProperty(CUSTOMIZER_FIELD)
					&& !(fields.getPropertyValue(CUSTOMIZER_FIELD) instanceof LateContainerRetries)) {
				factory.setContainerCustomizer(new LateContainerRetries(
						(ContainerCustomizer) fields.getPropertyValue(CUSTOMIZER_FIELD), this.installers,
						this.interceptors));
			}
			BatchInterceptor batch = factory.getBatchInterceptor();
			if (!(batch instanceof CurrentBatchInterceptor)) {
				BatchInterceptor binding = new CurrentBatchInterceptor();
				factory.setBatchInterceptor((batch != null) ? new CompositeBatchInterceptor(batch, binding) : binding);
			}
		}
		return bean;
	}

	/**
	 * Runs the application's customizer, then, for a container created after the
	 * installer ran, puts the infrastructure retries in front of its error handler; then
	 * adds the skip of known duplicates where it applies.
	 */
	@SuppressWarnings({ "unchecked", "rawtypes" })
	private record LateContainerRetries(@Nullable ContainerCustomizer application,
			ObjectProvider<InfrastructureRetryInstaller> installers,
			ObjectProvider<IdempotentListenerInterceptor> interceptors) implements ContainerCustomizer {

		@Override
		public void configure(AbstractMessageListenerContainer container) {
			if (this.application != null) {
				this.application.configure(container);
			}
			InfrastructureRetryInstaller installer = this.installers.getIfAvailable();
			if (installer != null && installer.isRunning()) {
				installer.install(container);
			}
			KnownDuplicates.install(container, this.interceptors::getIfAvailable);
		}

	}

	/**
	 * Runs the retry topics' container customizer, then, for a container created after the
	 * installer ran, puts the infrastructure retries in front of the error handler the
	 * retry topics gave it.
	 */
	private record LateRetryTopicContainerRetries(@Nullable Consumer<ConcurrentMessageListenerContainer<?, ?>> application,
			ObjectProvider<InfrastructureRetryInstaller> installers) implements Consumer<ConcurrentMessageListenerContainer<?, ?>> {

		@Override
		public void accept(ConcurrentMessageListenerContainer<?, ?> container) {
			if (this.application != null) {
				this.application.accept(container);
			}
			InfrastructureRetryInstaller installer = this.installers.getIfAvailable();
			if (installer != null && installer.isRunning()) {
				installer.install(container);
			}
		}

	}

}
