package dev.idempotency.internal.consumer;

import dev.idempotency.StoredResultCodec;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.store.JdbcProcessedMessageStore;
import dev.idempotency.store.ProcessedMessageStore;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;

/**
 * Stops the application context at start-up when an {@code @Idempotent} method asks for
 * what the application cannot give it: lease claims on a store that has none (the
 * Redis-only store), fingerprints or stored results of the transactional mode on another
 * store than the jdbc one, or stored results without a JSON mapper. The message names the
 * method.
 */
public final class LeaseModeValidator implements BeanPostProcessor, SmartInitializingSingleton {

	private final ObjectProvider<ProcessedMessageStore> store;

	private final BooleanSupplier hasResultCodec;

	private final List<String> leaseMethods = new ArrayList<>();

	private final List<String> resultMethods = new ArrayList<>();

	private final List<String> rowMethods = new ArrayList<>();

	/**
	 * Create a validator.
	 * @param store the processed-message store, looked up after all singletons exist
	 * @param hasResultCodec whether a codec of stored results exists
	 */
	public LeaseModeValidator(ObjectProvider<ProcessedMessageStore> store, BooleanSupplier hasResultCodec) {
		this.store = store;
		this.hasResultCodec = hasResultCodec;
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		IdempotentMethods.of(bean).forEach((method, idempotent) -> {
			String name = "'" + beanName + "' " + targetClass.getName() + "." + method.getName();
			synchronized (this.leaseMethods) {
				if (idempotent.mode() == Idempotent.Mode.LEASE) {
					this.leaseMethods.add(name);
				}
				else if (TransactionalRows.readsRow(idempotent)) {
					this.rowMethods.add(name);
				}
				if (idempotent.storeResult()) {
					this.resultMethods.add(name);
				}
			}
		});
		return bean;
	}

	@Override
	public void afterSingletonsInstantiated() {
		synchronized (this.leaseMethods) {
			if (this.leaseMethods.isEmpty() && this.rowMethods.isEmpty()) {
				return;
			}
			ProcessedMessageStore store = this.store.getIfUnique();
			if (store != null && !this.rowMethods.isEmpty() && !(store instanceof JdbcProcessedMessageStore)) {
				throw new BeanInitializationException("@Idempotent methods " + this.rowMethods + " set fingerprint, "
						+ "fingerprintExpression or storeResult, which the " + store.name() + " store does not "
						+ "support: use the jdbc store (idempotency.store.type=jdbc), or remove them");
			}
			if (store != null && !this.leaseMethods.isEmpty() && store.leases() == null) {
				throw new BeanInitializationException("@Idempotent(mode = LEASE) methods " + this.leaseMethods
						+ " need lease claims with fencing tokens, which the " + store.name() + " store does not "
						+ "support (fingerprints and stored results neither): use the jdbc store "
						+ "(idempotency.store.type=jdbc), or the transactional mode");
			}
			if (!this.resultMethods.isEmpty() && !this.hasResultCodec.getAsBoolean()) {
				throw new BeanInitializationException("@Idempotent(storeResult = true) methods " + this.resultMethods
						+ " need a Jackson JsonMapper to store their results as JSON, and the application has none: "
						+ "add Jackson (spring-boot-starter-json), declare a StoredResultCodec bean, or remove "
						+ "storeResult");
			}
		}
	}

}
