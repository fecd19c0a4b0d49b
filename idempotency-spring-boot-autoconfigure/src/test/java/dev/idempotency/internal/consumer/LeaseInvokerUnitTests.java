package dev.idempotency.internal.consumer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.idempotency.IdempotencyClaimFailedException;
import dev.idempotency.IdempotencyContext;
import dev.idempotency.Idempotent;
import dev.idempotency.internal.key.DefaultIdempotencyKeyResolver;
import dev.idempotency.MissingKeyPolicy;
import dev.idempotency.internal.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.store.Claim;
import dev.idempotency.store.LeaseClaim;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import org.springframework.aop.framework.ProxyFactory;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.transaction.support.TransactionOperations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Tests for the lease path of the interceptor on a proxy, with an in-memory stand-in of
 * the lease store; the PostgreSQL store is covered by {@code LeaseModeIntegrationTests}.
 */
class LeaseInvokerUnitTests {

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	private final FakeLeases leases = new FakeLeases();

	@Test
	void completionThatFailsOnTheDatabaseIsRetriedWhileTheLeaseLasts() {
		this.leases.completionFailure = new DataAccessResourceFailureException("connection reset");
		this.leases.completionFailuresLeft = 2;
		Listener listener = proxy();
		assertThat(listener.on(keyed("r"))).isEqualTo("done 7");
		assertThat(this.leases.calls).containsExactly("claim r", "complete r 7");
	}

	@Test
	void failedCompletionAfterTheWorkIsLoggedAndTheRecordAcknowledged() {
		this.leases.completionFailure = new DataAccessResourceFailureException("connection reset");
		Listener listener = proxy();
		assertThat(listener.onShortLease(keyed("a"))).isEqualTo("done 7");
		assertThat(this.registry.get("idempotency.messages").tags("outcome", "processed").counter().count())
			.isEqualTo(1);
	}

	@Test
	void nonRetryableTypeAnywhereInTheCauseChainMarksTheClaimFailed() {
		Listener listener = proxy();
		assertThatExceptionOfType(IdempotencyClaimFailedException.class).isThrownBy(() -> listener.wrapped(keyed("b")))
			.withRootCauseInstanceOf(IllegalArgumentException.class);
		assertThat(this.leases.calls).containsExactly("claim b", "fail b 7");
	}

	@Test
	void retryableFailureReleasesTheClaim() {
		Listener listener = proxy();
		assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> listener.fails(keyed("c")));
		assertThat(this.leases.calls).containsExactly("claim c", "release c 7");
	}

	@Test
	void fencingTokenIsAvailableOnlyWhileTheMethodRuns() {
		Listener listener = proxy();
		listener.on(keyed("d"));
		assertThat(IdempotencyContext.currentFencingToken()).isEmpty();
	}

	private Listener proxy() {
		ProxyFactory factory = new ProxyFactory(new Listener());
		factory.setProxyTargetClass(true);
		LeaseInvoker invoker = new LeaseInvoker(this.leases, LeaseSettings.DEFAULTS, null, List::of);
		factory.addAdvisor(new IdempotentListenerAdvisor(() -> new IdempotentListenerInterceptor(this.leases,
				new DefaultIdempotencyKeyResolver("X-Idempotency-Key"), MissingKeyPolicy.REJECT,
				TransactionOperations.withoutTransaction(), new MicrometerIdempotencyMetrics(this.registry), null,
				ObservationRegistry.NOOP, invoker), 0));
		return (Listener) factory.getProxy();
	}

	private static ConsumerRecord<String, String> keyed(String key) {
		ConsumerRecord<String, String> record = new ConsumerRecord<>("payments", 0, 1, null, "v");
		record.headers().add("X-Idempotency-Key", key.getBytes(StandardCharsets.UTF_8));
		return record;
	}

	static class Listener {

		@KafkaListener(topics = "payments", groupId = "gateway")
		@Idempotent(mode = Idempotent.Mode.LEASE)
		public String on(ConsumerRecord<String, String> record) {
			return "done " + IdempotencyContext.fencingToken();
		}

		@KafkaListener(topics = "payments", groupId = "gateway")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "1s")
		public String onShortLease(ConsumerRecord<String, String> record) {
			return "done " + IdempotencyContext.fencingToken();
		}

		@KafkaListener(topics = "payments", groupId = "gateway")
		@Idempotent(mode = Idempotent.Mode.LEASE, nonRetryable = IllegalArgumentException.class)
		public void wrapped(ConsumerRecord<String, String> record) {
			throw new IllegalStateException("gateway answered 400", new IllegalArgumentException("card"));
		}

		@KafkaListener(topics = "payments", groupId = "gateway")
		@Idempotent(mode = Idempotent.Mode.LEASE, nonRetryable = IllegalArgumentException.class)
		public void fails(ConsumerRecord<String, String> record) {
			throw new IllegalStateException("gateway timed out");
		}

	}

	static class FakeLeases implements LeaseStore, ProcessedMessageStore {

		final List<String> calls = new ArrayList<>();

		@Nullable RuntimeException completionFailure;

		int completionFailuresLeft = Integer.MAX_VALUE;

		@Override
		public LeaseClaim claim(ProcessedMessage message, Duration lease, @Nullable String fingerprint) {
			this.calls.add("claim " + message.key());
			return LeaseClaim.acquired(7, false);
		}

		@Override
		public boolean complete(ProcessedMessage message, long fencingToken, @Nullable String result) {
			if (this.completionFailure != null && this.completionFailuresLeft > 0) {
				this.completionFailuresLeft--;
				throw this.completionFailure;
			}
			this.calls.add("complete " + message.key() + " " + fencingToken);
			return true;
		}

		@Override
		public boolean release(ProcessedMessage message, long fencingToken) {
			this.calls.add("release " + message.key() + " " + fencingToken);
			return true;
		}

		@Override
		public boolean fail(ProcessedMessage message, long fencingToken, String failure) {
			this.calls.add("fail " + message.key() + " " + fencingToken);
			return true;
		}

		@Override
		public Claim claim(ProcessedMessage message) {
			throw new UnsupportedOperationException();
		}

		@Override
		public boolean isProcessed(String scope, String key) {
			return false;
		}

		@Override
		public LeaseStore leases() {
			return this;
		}

	}

}
