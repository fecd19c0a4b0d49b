package dev.idempotency.autoconfigure;

import dev.idempotency.Idempotent;
import dev.idempotency.store.ProcessedMessageStore;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.util.ReflectionUtils;

/**
 * Stops the application at start-up when it has {@code @Idempotent} methods but no
 * {@link ProcessedMessageStore}, so that the interceptor is not configured: without it,
 * the annotations would be silently ignored and every duplicate applied again. The JDBC
 * store needs a single {@code DataSource} (or a {@code @Primary} one); the Redis store, a
 * Redis connection factory. A store that is missing because of a bad property (an unknown
 * {@code idempotency.store.type}) is reported by the binder instead, naming the property
 * and its value.
 */
@AutoConfiguration(after = { IdempotencyJdbcStoreAutoConfiguration.class, IdempotencyRedisAutoConfiguration.class,
		IdempotencyAutoConfiguration.class })
@ConditionalOnClass(KafkaListener.class)
@ConditionalOnBooleanProperty(name = "idempotency.enabled", matchIfMissing = true)
@ConditionalOnMissingBean(ProcessedMessageStore.class)
@EnableConfigurationProperties(IdempotencyProperties.class)
final class IdempotencyStoreMissingAutoConfiguration {

	@Bean
	static BeanPostProcessor idempotencyStoreMissingGuard(ObjectProvider<IdempotencyProperties> properties) {
		return new BeanPostProcessor() {

			@Override
			public Object postProcessAfterInitialization(Object bean, String beanName) {
				Class<?> targetClass = AopUtils.getTargetClass(bean);
				if (!AnnotationUtils.isCandidateClass(targetClass, Idempotent.class)) {
					return bean;
				}
				ReflectionUtils.doWithMethods(targetClass, (method) -> {
					// a bad value (such as an unknown store type) fails the binding here, naming
					// the property, before this message can blame the DataSource or Redis
					properties.getObject();
					throw new BeanInitializationException("Bean '" + beanName + "' has @Idempotent method "
							+ method.getName() + ", but no idempotency store is configured, so @Idempotent would be "
							+ "ignored and duplicates applied again. The JDBC store needs a single DataSource bean, "
							+ "or one marked @Primary; idempotency.store.type=redis needs a Redis connection "
							+ "factory; or define a ProcessedMessageStore bean. Set idempotency.enabled=false to "
							+ "run without the starter");
				}, (method) -> MergedAnnotations.from(method).isPresent(Idempotent.class));
				return bean;
			}

		};
	}

}
