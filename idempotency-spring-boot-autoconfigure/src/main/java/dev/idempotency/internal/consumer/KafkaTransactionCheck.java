package dev.idempotency.internal.consumer;

import java.lang.reflect.Method;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.kafka.core.KafkaResourceHolder;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Warns, once per listener method, when an {@code @Idempotent} listener runs inside a
 * Kafka transaction (the container's, or one a transactional {@code KafkaTemplate} started
 * for its sends). The database transaction commits first; if the Kafka transaction then
 * aborts, the record is redelivered and skipped as a duplicate, and the sends are lost.
 */
final class KafkaTransactionCheck {

	private static final Log logger = LogFactory.getLog(KafkaTransactionCheck.class);

	private final Set<Method> warned = ConcurrentHashMap.newKeySet();

	/**
	 * Check the transaction resources bound to the thread, inside the listener's
	 * transaction, after the listener ran.
	 * @param method the listener method
	 */
	void check(ListenerMethod method) {
		if (this.warned.contains(method.method())) {
			return;
		}
		for (Object resource : TransactionSynchronizationManager.getResourceMap().values()) {
			if (resource instanceof KafkaResourceHolder<?, ?> && this.warned.add(method.method())) {
				logger.warn("@Idempotent listener " + method.name() + " runs in a Kafka transaction: its database "
						+ "work commits first, and if the Kafka transaction then aborts, the redelivered record is "
						+ "skipped as a duplicate and what it sent is lost. Publish from @Idempotent listeners with "
						+ "Outbox.publish, in the database transaction, instead of a transactional KafkaTemplate");
			}
		}
	}

}
