package dev.idempotency.internal.consumer;

import java.util.List;

import dev.idempotency.Idempotent;
import dev.idempotency.store.Claim;
import dev.idempotency.store.ProcessedMessage;
import dev.idempotency.store.ProcessedMessageStore;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.kafka.annotation.KafkaListener;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatNoException;

/**
 * The start-up refusals of lease-mode listeners that cannot work, each with a message that
 * names the method and the way out.
 */
class LeaseModeStartupUnitTests {

	private final IdempotentMethodValidator validator = new IdempotentMethodValidator();

	@Test
	void refusesLeaseModeOnABatchListener() {
		assertThatExceptionOfType(BeanInitializationException.class)
			.isThrownBy(() -> this.validator.postProcessAfterInitialization(new BatchLease(), "batch"))
			.withMessageContaining("BatchLease.on")
			.withMessageContaining("mode = LEASE is supported on record listeners only");
	}

	@Test
	void refusesLeaseAttributesInTheTransactionalMode() {
		assertThatExceptionOfType(BeanInitializationException.class)
			.isThrownBy(() -> this.validator.postProcessAfterInitialization(new TransactionalWithLease(), "tx"))
			.withMessageContaining("TransactionalWithLease.on")
			.withMessageContaining("apply to mode = LEASE only");
	}

	@Test
	void acceptsFingerprintsAndStoredResultsInTheTransactionalMode() {
		assertThatNoException()
			.isThrownBy(() -> this.validator.postProcessAfterInitialization(new TransactionalWithResult(), "tx"));
	}

	@Test
	void refusesFingerprintsAndStoredResultsOnATransactionalBatchListener() {
		assertThatExceptionOfType(BeanInitializationException.class)
			.isThrownBy(() -> this.validator.postProcessAfterInitialization(new BatchWithResult(), "batch"))
			.withMessageContaining("BatchWithResult.on")
			.withMessageContaining("supported on record listeners only");
	}

	@Test
	void refusesAStoredResultOfAVoidMethodInTheTransactionalMode() {
		assertThatExceptionOfType(BeanInitializationException.class)
			.isThrownBy(() -> this.validator.postProcessAfterInitialization(new TransactionalVoidResult(), "void"))
			.withMessageContaining("TransactionalVoidResult.on")
			.withMessageContaining("returns void");
	}

	@Test
	void refusesTransactionalFingerprintsAndStoredResultsOnAnotherStoreThanJdbc() {
		DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
		beans.registerSingleton("store", new NoLeases());
		LeaseModeValidator validator = new LeaseModeValidator(beans.getBeanProvider(ProcessedMessageStore.class),
				() -> true);
		validator.postProcessAfterInitialization(new TransactionalWithResult(), "tx");
		assertThatExceptionOfType(BeanInitializationException.class)
			.isThrownBy(validator::afterSingletonsInstantiated)
			.withMessageContaining("TransactionalWithResult.on")
			.withMessageContaining("which the no-leases store does not support")
			.withMessageContaining("idempotency.store.type=jdbc");
	}

	@Test
	void refusesTransactionalStoredResultsWithoutAJsonMapper() {
		DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
		LeaseModeValidator validator = new LeaseModeValidator(beans.getBeanProvider(ProcessedMessageStore.class),
				() -> false);
		validator.postProcessAfterInitialization(new TransactionalWithResult(), "tx");
		assertThatExceptionOfType(BeanInitializationException.class)
			.isThrownBy(validator::afterSingletonsInstantiated)
			.withMessageContaining("TransactionalWithResult.on")
			.withMessageContaining("Jackson");
	}

	@Test
	void refusesAStoredResultOfAVoidMethod() {
		assertThatExceptionOfType(BeanInitializationException.class)
			.isThrownBy(() -> this.validator.postProcessAfterInitialization(new VoidResult(), "void"))
			.withMessageContaining("VoidResult.on")
			.withMessageContaining("returns void");
	}

	@Test
	void refusesAnInvalidLease() {
		assertThatExceptionOfType(BeanInitializationException.class)
			.isThrownBy(() -> this.validator.postProcessAfterInitialization(new InvalidLease(), "lease"))
			.withMessageContaining("InvalidLease.on")
			.withMessageContaining("invalid lease 'soon'");
	}

	@Test
	void acceptsAValidLeaseListener() {
		assertThatNoException()
			.isThrownBy(() -> this.validator.postProcessAfterInitialization(new ValidLease(), "valid"));
	}

	@Test
	void refusesLeaseModeOnAStoreWithoutLeaseClaims() {
		DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
		beans.registerSingleton("store", new NoLeases());
		LeaseModeValidator leases = new LeaseModeValidator(beans.getBeanProvider(ProcessedMessageStore.class),
				() -> true);
		leases.postProcessAfterInitialization(new ValidLease(), "valid");
		assertThatExceptionOfType(BeanInitializationException.class).isThrownBy(leases::afterSingletonsInstantiated)
			.withMessageContaining("ValidLease.on")
			.withMessageContaining("which the no-leases store does not support")
			.withMessageContaining("idempotency.store.type=jdbc");
	}

	@Test
	void refusesStoredResultsWithoutAJsonMapper() {
		DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
		LeaseModeValidator leases = new LeaseModeValidator(beans.getBeanProvider(ProcessedMessageStore.class),
				() -> false);
		leases.postProcessAfterInitialization(new ValidLease(), "valid");
		assertThatExceptionOfType(BeanInitializationException.class).isThrownBy(leases::afterSingletonsInstantiated)
			.withMessageContaining("storeResult")
			.withMessageContaining("Jackson");
	}

	static class BatchLease {

		@KafkaListener(topics = "t", batch = "true")
		@Idempotent(mode = Idempotent.Mode.LEASE)
		public void on(List<ConsumerRecord<String, String>> records) {
		}

	}

	static class TransactionalWithLease {

		@KafkaListener(topics = "t")
		@Idempotent(lease = "30s")
		public void on(String value) {
		}

	}

	static class TransactionalWithResult {

		@KafkaListener(topics = "t")
		@Idempotent(storeResult = true, fingerprint = true)
		public String on(String value) {
			return value;
		}

	}

	static class BatchWithResult {

		@KafkaListener(topics = "t", batch = "true")
		@Idempotent(storeResult = true)
		public String on(List<ConsumerRecord<String, String>> records) {
			return "";
		}

	}

	static class TransactionalVoidResult {

		@KafkaListener(topics = "t")
		@Idempotent(fingerprint = true, storeResult = true)
		public void on(String value) {
		}

	}

	static class VoidResult {

		@KafkaListener(topics = "t")
		@Idempotent(mode = Idempotent.Mode.LEASE, storeResult = true)
		public void on(String value) {
		}

	}

	static class InvalidLease {

		@KafkaListener(topics = "t")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "soon")
		public void on(String value) {
		}

	}

	static class ValidLease {

		@KafkaListener(topics = "t")
		@Idempotent(mode = Idempotent.Mode.LEASE, lease = "30s", storeResult = true, fingerprint = true)
		public String on(String value) {
			return value;
		}

	}

	static class NoLeases implements ProcessedMessageStore {

		@Override
		public Claim claim(ProcessedMessage message) {
			return Claim.NEW;
		}

		@Override
		public boolean isProcessed(String scope, String key) {
			return false;
		}

		@Override
		public String name() {
			return "no-leases";
		}

	}

}
