package dev.idempotency.internal.consumer;

import java.time.Duration;

import org.apache.kafka.clients.producer.MockProducer;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.kafka.core.KafkaResourceHolder;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.Idempotent;
import dev.idempotency.IdempotencyKeyMissingException;
import dev.idempotency.internal.key.DefaultIdempotencyKeyResolver;
import dev.idempotency.MissingKeyPolicy;
import dev.idempotency.internal.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

import org.springframework.aop.framework.ProxyFactory;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.transaction.support.TransactionOperations;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * Tests for {@link IdempotentListenerInterceptor} on a proxy, without a Spring context.
 * The store here is an in-memory stand-in; the real store's behaviour is covered by its
 * own integration tests.
 */
@ExtendWith(OutputCaptureExtension.class)
class IdempotentListenerInterceptorUnitTests {

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	private final InMemoryStore store = new InMemoryStore();

	@Test
	void warnsOnceWhenTheListenerRunsInAKafkaTransaction(CapturedOutput output) {
		Listener listener = proxy(MissingKeyPolicy.RECORD_COORDINATES);
		Object producerFactory = new Object();
		try {
			listener.sendsInKafkaTransaction(keyed("a", 1), producerFactory);
			TransactionSynchronizationManager.unbindResource(producerFactory);
			listener.sendsInKafkaTransaction(keyed("b", 2), producerFactory);
		}
		finally {
			TransactionSynchronizationManager.unbindResourceIfPossible(producerFactory);
		}
		assertThat(output.getOut().split("runs in a Kafka transaction", -1)).hasSize(2);
		assertThat(output.getOut()).contains("Listener.sendsInKafkaTransaction");
	}

	@Test
	void invokesTheListenerOnceForAKeyAndSkipsItsDuplicates() {
		Listener listener = proxy(MissingKeyPolicy.RECORD_COORDINATES);
		listener.on(keyed("a", 1));
		listener.on(keyed("a", 2));
		listener.on(keyed("b", 3));
		assertThat(listener.received()).containsExactly(1L, 3L);
		assertThat(outcome("processed", "store")).isEqualTo(2);
		assertThat(outcome("duplicate", "store")).isEqualTo(1);
		assertThat(this.registry.get("idempotency.claim").tag("store", "memory").timer().count()).isEqualTo(3);
	}

	@Test
	void acknowledgesASkippedDuplicateForAManualAckListener() {
		Listener listener = proxy(MissingKeyPolicy.RECORD_COORDINATES);
		List<String> acks = new ArrayList<>();
		listener.onWithAck(keyed("a", 1), () -> acks.add("first"));
		listener.onWithAck(keyed("a", 2), () -> acks.add("second"));
		assertThat(acks).containsExactly("first", "second");
		assertThat(listener.received()).containsExactly(1L);
	}

	@Test
	void rethrowsTheListenersCheckedExceptionUnwrapped() {
		Listener listener = proxy(MissingKeyPolicy.RECORD_COORDINATES);
		assertThatExceptionOfType(IOException.class).isThrownBy(() -> listener.failing(keyed("a", 1)))
			.withMessage("disk full");
		assertThat(outcome("failed", "store")).isEqualTo(1);
	}

	@Test
	void usesTheAnnotatedScope() {
		Listener listener = proxy(MissingKeyPolicy.RECORD_COORDINATES);
		listener.scoped(keyed("a", 1));
		assertThat(this.store.claimed).containsExactly("billing|a");
	}

	@Test
	void usesRecordCoordinatesForARecordWithoutKey() {
		Listener listener = proxy(MissingKeyPolicy.RECORD_COORDINATES);
		listener.scoped(new ConsumerRecord<>("payments", 4, 17, null, "v"));
		assertThat(this.store.claimed).containsExactly("billing|payments-4-17");
	}

	@Test
	void rejectsARecordWithoutKeyWithoutInvokingTheListener() {
		Listener listener = proxy(MissingKeyPolicy.REJECT);
		assertThatExceptionOfType(IdempotencyKeyMissingException.class)
			.isThrownBy(() -> listener.on(new ConsumerRecord<>("payments", 4, 17, null, "v")))
			.withMessageContaining("payments-4@17");
		assertThat(listener.received()).isEmpty();
		assertThat(outcome("rejected", "none")).isEqualTo(1);
	}

	@Test
	void skipsARecordWithoutKeyAndAcknowledgesIt() {
		Listener listener = proxy(MissingKeyPolicy.SKIP);
		List<String> acks = new ArrayList<>();
		listener.onWithAck(new ConsumerRecord<>("payments", 4, 17, null, "v"), () -> acks.add("skipped"));
		assertThat(listener.received()).isEmpty();
		assertThat(acks).containsExactly("skipped");
		assertThat(outcome("rejected", "none")).isEqualTo(1);
	}

	@Test
	void explainsAPayloadOnlyInvocationWithoutABoundRecord() {
		Listener listener = proxy(MissingKeyPolicy.RECORD_COORDINATES);
		assertThatIllegalStateException().isThrownBy(() -> listener.payloadOnly("v"))
			.withMessageContaining("No Kafka record is bound")
			.withMessageContaining("Listener.payloadOnly");
	}

	@Test
	void readsTheRecordBoundByTheContainerForAPayloadOnlyListener() {
		Listener listener = proxy(MissingKeyPolicy.RECORD_COORDINATES);
		CurrentRecord.set(keyed("a", 5));
		try {
			listener.payloadOnly("v");
			listener.payloadOnly("v");
		}
		finally {
			CurrentRecord.clear();
		}
		assertThat(listener.received()).containsExactly(5L);
	}

	private double outcome(String outcome, String source) {
		return this.registry.find("idempotency.messages")
			.tags("outcome", outcome, "source", source)
			.counters()
			.stream()
			.mapToDouble((counter) -> counter.count())
			.sum();
	}

	private Listener proxy(MissingKeyPolicy policy) {
		ProxyFactory factory = new ProxyFactory(new Listener());
		factory.setProxyTargetClass(true);
		factory.addAdvisor(new IdempotentListenerAdvisor(() -> new IdempotentListenerInterceptor(this.store,
				new DefaultIdempotencyKeyResolver("X-Idempotency-Key"), policy,
				TransactionOperations.withoutTransaction(), new MicrometerIdempotencyMetrics(this.registry), null), 0));
		return (Listener) factory.getProxy();
	}

	private static ConsumerRecord<String, String> keyed(String key, long offset) {
		ConsumerRecord<String, String> record = new ConsumerRecord<>("payments", 0, offset, null, "v");
		record.headers().add("X-Idempotency-Key", key.getBytes(StandardCharsets.UTF_8));
		return record;
	}

	static class Listener {

		private final List<Long> received = new ArrayList<>();

		// what a transactional KafkaTemplate does on its first send in a transaction
		@KafkaListener(topics = "payments", groupId = "ledger")
		@Idempotent
		public void sendsInKafkaTransaction(ConsumerRecord<String, String> record, Object producerFactory) {
			TransactionSynchronizationManager.bindResource(producerFactory,
					new KafkaResourceHolder<>(new MockProducer<>(), Duration.ZERO));
		}

		@KafkaListener(topics = "payments", groupId = "ledger")
		@Idempotent
		public void on(ConsumerRecord<String, String> record) {
			this.received.add(record.offset());
		}

		@KafkaListener(topics = "payments", groupId = "ledger")
		@Idempotent
		public void onWithAck(ConsumerRecord<String, String> record, Acknowledgment acknowledgment) {
			this.received.add(record.offset());
			acknowledgment.acknowledge();
		}

		@KafkaListener(topics = "payments", groupId = "ledger")
		@Idempotent
		public void failing(ConsumerRecord<String, String> record) throws IOException {
			throw new IOException("disk full");
		}

		@KafkaListener(topics = "payments", groupId = "ledger")
		@Idempotent(scope = "billing")
		public void scoped(ConsumerRecord<String, String> record) {
		}

		@KafkaListener(topics = "payments", groupId = "ledger")
		@Idempotent
		public void payloadOnly(String payload) {
			this.received.add(CurrentRecord.get().offset());
		}

		public List<Long> received() {
			return this.received;
		}

	}

	static final class InMemoryStore implements ProcessedMessageStore {

		final Set<String> claimed = ConcurrentHashMap.newKeySet();

		@Override
		public Claim claim(ProcessedMessage message) {
			return this.claimed.add(message.scope() + "|" + message.key()) ? Claim.NEW : Claim.DUPLICATE;
		}

		@Override
		public boolean isProcessed(String scope, String key) {
			return this.claimed.contains(scope + "|" + key);
		}

		@Override
		public String name() {
			return "memory";
		}

	}

}
