package dev.idempotency.internal.consumer;

import java.sql.Connection;
import java.sql.SQLException;

import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.ClassUtils;

/**
 * Fails a listener whose transaction PostgreSQL has aborted: a statement of the listener
 * failed and the listener caught its exception and returned normally. The commit of such a
 * transaction rolls everything back, the claim included, and the driver reports it as a
 * normal commit; the record would count as processed and its offset be committed with
 * nothing applied. The driver knows the state of the transaction without a round trip.
 */
final class AbortedTransactionCheck {

	private static final boolean PGJDBC_PRESENT = ClassUtils.isPresent("org.postgresql.core.BaseConnection",
			AbortedTransactionCheck.class.getClassLoader());

	private AbortedTransactionCheck() {
	}

	/**
	 * Check the connections bound to the listener's transaction, after the listener ran.
	 * @param method the listener method
	 * @throws IllegalStateException if PostgreSQL aborted the transaction, so that it rolls
	 * back and the record goes to the error handler
	 */
	static void check(ListenerMethod method) {
		if (!PGJDBC_PRESENT) {
			return;
		}
		for (Object resource : TransactionSynchronizationManager.getResourceMap().values()) {
			if (resource instanceof ConnectionHolder holder && Postgres.isAborted(holder.getConnection())) {
				throw new IllegalStateException("@Idempotent listener " + method.name() + " returned, but PostgreSQL "
						+ "aborted its transaction: one of its statements failed and the exception was caught. "
						+ "The commit would roll back its work and its claim and the record would be lost; it fails "
						+ "instead. Let the exception propagate, or run the statement that may fail in a savepoint "
						+ "(a nested transaction) or as INSERT ... ON CONFLICT DO NOTHING");
			}
		}
	}

	private static final class Postgres {

		static boolean isAborted(Connection connection) {
			try {
				return connection.isWrapperFor(BaseConnection.class)
						&& connection.unwrap(BaseConnection.class).getTransactionState() == TransactionState.FAILED;
			}
			catch (SQLException ex) {
				// the connection cannot tell: the commit decides, as without this check
				return false;
			}
		}

	}

}
