package dev.idempotency.autoconfigure;

import java.util.function.Supplier;

import dev.idempotency.IdempotencyKeyResolver;
import dev.idempotency.cache.ProcessedKeyCache;
import dev.idempotency.internal.consumer.IdempotentListenerInterceptor;
import dev.idempotency.internal.consumer.InfrastructureRetryInstaller;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxMetrics;
import dev.idempotency.outbox.OutboxPayloadSerializer;
import dev.idempotency.internal.outbox.OutboxRelay;
import dev.idempotency.internal.outbox.OutboxRepository;
import dev.idempotency.outbox.OutboxTraceContext;
import dev.idempotency.internal.store.ProcessedMessageCleanup;
import dev.idempotency.store.ProcessedMessageStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.Mockito.mock;

/**
 * Every bean the README lists as replaceable backs off when the application defines one of
 * its type.
 */
class UserBeansAutoConfigurationTests {

	private final ApplicationContextRunner runner = AutoConfigurationRunners
		.onTheTestServers(IdempotencyAutoConfiguration.class, IdempotencySchemaAutoConfiguration.class,
				IdempotencyJdbcStoreAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class,
				IdempotencyMetricsAutoConfiguration.class)
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new);

	@Test
	void theStarterDefinesEachReplaceableBeanOnItsOwn() {
		this.runner.run((context) -> assertThat(context).hasNotFailed()
			.hasSingleBean(IdempotencyKeyResolver.class)
			.hasSingleBean(ProcessedMessageStore.class)
			.hasSingleBean(ProcessedMessageCleanup.class)
			.hasSingleBean(IdempotencySchemaMigration.class)
			.hasSingleBean(IdempotencyMetrics.class)
			.hasSingleBean(IdempotentListenerInterceptor.class)
			.hasSingleBean(InfrastructureRetryInstaller.class)
			.hasSingleBean(OutboxRepository.class)
			.hasSingleBean(OutboxRelay.class)
			.hasSingleBean(Outbox.class)
			.hasSingleBean(OutboxDeadLetters.class)
			.hasSingleBean(OutboxMetrics.class)
			.hasSingleBean(OutboxPayloadSerializer.class));
	}

	@Test
	void aUserKeyResolverWins() {
		assertUserBeanWins(IdempotencyKeyResolver.class, () -> (message) -> "constant");
	}

	@Test
	void aUserStoreWins() {
		assertUserBeanWins(ProcessedMessageStore.class, () -> mock(ProcessedMessageStore.class));
	}

	@Test
	void aUserCacheIsTheOneTheListenersUse() {
		assertUserBeanWins(ProcessedKeyCache.class, () -> mock(ProcessedKeyCache.class));
	}

	@Test
	void aUserCleanupWins() {
		assertUserBeanWins(ProcessedMessageCleanup.class, () -> mock(ProcessedMessageCleanup.class));
	}

	@Test
	void aUserSchemaMigrationWins() {
		assertUserBeanWins(IdempotencySchemaMigration.class, () -> mock(IdempotencySchemaMigration.class));
	}

	@Test
	void aUserMetersRecorderWins() {
		assertUserBeanWins(IdempotencyMetrics.class, () -> IdempotencyMetrics.NONE);
		assertUserBeanWins(OutboxMetrics.class, () -> OutboxMetrics.NONE);
	}

	@Test
	void aUserInterceptorWins() {
		assertUserBeanWins(IdempotentListenerInterceptor.class, () -> mock(IdempotentListenerInterceptor.class));
	}

	@Test
	void aUserInfrastructureRetryInstallerWins() {
		assertUserBeanWins(InfrastructureRetryInstaller.class, () -> mock(InfrastructureRetryInstaller.class));
	}

	@Test
	void aUserRelayWins() {
		assertUserBeanWins(OutboxRelay.class, () -> mock(OutboxRelay.class));
	}

	@Test
	void aUserOutboxWins() {
		assertUserBeanWins(Outbox.class, () -> mock(Outbox.class));
		assertUserBeanWins(OutboxRepository.class, () -> mock(OutboxRepository.class));
		assertUserBeanWins(OutboxDeadLetters.class, () -> mock(OutboxDeadLetters.class));
		assertUserBeanWins(OutboxPayloadSerializer.class, () -> mock(OutboxPayloadSerializer.class));
		assertUserBeanWins(OutboxTraceContext.class, () -> OutboxTraceContext.NONE);
	}

	private <T> void assertUserBeanWins(Class<T> type, Supplier<T> userBean) {
		T bean = userBean.get();
		this.runner.withBean("userBean", type, () -> bean)
			.run((context) -> assertThat(context).hasNotFailed().getBean(type).isSameAs(bean));
	}

}
