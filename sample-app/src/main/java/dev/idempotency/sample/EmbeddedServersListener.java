package dev.idempotency.sample;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.boot.context.event.ApplicationFailedEvent;
import org.springframework.boot.context.event.ApplicationPreparedEvent;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.event.SmartApplicationListener;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Starts {@link EmbeddedServers} for each of Kafka, PostgreSQL and Redis that the
 * environment does not configure, before the context is created, and stops them when the
 * context closes (after the beans that use them).
 * <p>
 * Set {@code sample.embedded=false} to never start any.
 */
class EmbeddedServersListener implements SmartApplicationListener {

	private static final Log logger = LogFactory.getLog(EmbeddedServersListener.class);

	private @Nullable EmbeddedServers servers;

	@Override
	public boolean supportsEventType(Class<? extends ApplicationEvent> eventType) {
		return ApplicationEnvironmentPreparedEvent.class.isAssignableFrom(eventType)
				|| ApplicationPreparedEvent.class.isAssignableFrom(eventType)
				|| ApplicationFailedEvent.class.isAssignableFrom(eventType);
	}

	@Override
	public int getOrder() {
		// after the config data (application.yml) has been loaded
		return Ordered.LOWEST_PRECEDENCE;
	}

	@Override
	public void onApplicationEvent(ApplicationEvent event) {
		if (event instanceof ApplicationEnvironmentPreparedEvent prepared) {
			start(prepared.getEnvironment());
		}
		else if (event instanceof ApplicationPreparedEvent prepared && this.servers != null) {
			register(prepared.getApplicationContext(), this.servers);
		}
		else if (event instanceof ApplicationFailedEvent && this.servers != null) {
			this.servers.close();
		}
	}

	private void start(ConfigurableEnvironment environment) {
		if (!environment.getProperty("sample.embedded", Boolean.class, true) || this.servers != null) {
			return;
		}
		boolean kafka = !environment.containsProperty("spring.kafka.bootstrap-servers");
		boolean postgres = !environment.containsProperty("spring.datasource.url");
		boolean redis = !environment.containsProperty("spring.data.redis.host")
				&& !environment.containsProperty("spring.data.redis.url");
		if (!kafka && !postgres && !redis) {
			return;
		}
		EmbeddedServers servers = new EmbeddedServers();
		this.servers = servers;
		try {
			if (postgres) {
				servers.startPostgres();
			}
			if (redis) {
				servers.startRedis();
			}
			if (kafka) {
				servers.startKafka();
			}
		}
		catch (RuntimeException ex) {
			servers.close();
			throw ex;
		}
		environment.getPropertySources().addFirst(new MapPropertySource("embeddedServers", servers.properties()));
		logger.info("No external servers configured, started embedded " + String.join(", ", servers.started()));
	}

	private void register(ConfigurableApplicationContext context, EmbeddedServers servers) {
		DefaultListableBeanFactory beanFactory = (DefaultListableBeanFactory) context.getBeanFactory();
		beanFactory.registerSingleton("embeddedServers", servers);
		// registered before every other bean, destroyed after all of them
		beanFactory.registerDisposableBean("embeddedServersShutdown", servers::close);
	}

}
