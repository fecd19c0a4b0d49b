package dev.idempotency.autoconfigure;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxTraceContext;
import dev.idempotency.internal.outbox.TracerOutboxTraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import org.junit.jupiter.api.Test;

import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.Mockito.mock;

/**
 * Tests for the trace context of {@link IdempotencyOutboxAutoConfiguration}.
 */
class IdempotencyOutboxTracingAutoConfigurationTests {

	private final ApplicationContextRunner runner = AutoConfigurationRunners
		.onTheTestServers(IdempotencyAutoConfiguration.class, IdempotencyJdbcStoreAutoConfiguration.class,
				IdempotencyOutboxAutoConfiguration.class)
		.withPropertyValues("idempotency.outbox.relay-enabled=false", "idempotency.flyway.enabled=false");

	@Test
	void storesTheTraceContextWhenTheApplicationHasATracerAndAPropagator() {
		this.runner.withBean(Tracer.class, () -> mock(Tracer.class))
			.withBean(Propagator.class, () -> Propagator.NOOP)
			.run((context) -> assertThat(context).getBean(OutboxTraceContext.class)
				.isInstanceOf(TracerOutboxTraceContext.class));
	}

	@Test
	void storesNoTraceContextWithoutATracer() {
		this.runner.withBean(Propagator.class, () -> Propagator.NOOP)
			.run((context) -> assertThat(context).getBean(OutboxTraceContext.class)
				.isSameAs(OutboxTraceContext.NONE));
	}

	@Test
	void publishesWithoutMicrometerTracingOnTheClasspath() {
		this.runner.withClassLoader(new FilteredClassLoader(Tracer.class))
			.run((context) -> assertThat(context).hasNotFailed()
				.hasSingleBean(Outbox.class)
				.doesNotHaveBean(OutboxTraceContext.class));
	}

}
