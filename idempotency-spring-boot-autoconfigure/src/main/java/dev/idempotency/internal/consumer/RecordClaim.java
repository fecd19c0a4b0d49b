package dev.idempotency.internal.consumer;

import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

/**
 * How a listener's plan claims a record's key and invokes the method: in the
 * transaction of its work ({@link TransactionalRecordClaim}), or with a lease
 * ({@link LeaseInvoker}).
 */
@FunctionalInterface
interface RecordClaim {

	/**
	 * Claim the key and invoke the method when it is new.
	 * @param invocation the invocation
	 * @param record the record and its key
	 * @return what the method returned, or what a duplicate returns
	 * @throws Throwable the method's failure, for the container's error handler
	 */
	@Nullable Object claimAndProceed(MethodInvocation invocation, RecordInvocation record) throws Throwable;

}
