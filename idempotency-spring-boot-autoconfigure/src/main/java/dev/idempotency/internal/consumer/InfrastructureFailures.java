package dev.idempotency.internal.consumer;

import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.util.List;

import dev.idempotency.IdempotencyKeyInProgressException;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.OptimisticLockingFailureException;
import org.springframework.dao.RecoverableDataAccessException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.transaction.CannotCreateTransactionException;

/**
 * Tells the failures that mean "the infrastructure is not there right now" from the
 * application's own: a database or Redis that cannot be reached or is restarting, a lock
 * or statement timeout, a deadlock or serialization failure, a key held by another
 * consumer. Records that fail this way are delayed, never given up.
 */
public final class InfrastructureFailures {

	// SQLSTATE classes: connection exception, transaction rollback (serialization failure,
	// deadlock), insufficient resources, operator intervention (shutdown, starting up,
	// statement timeout), system error; lock_not_available, and read_only_sql_transaction (a
	// write that reached a standby during a failover)
	private static final List<String> SQL_STATES = List.of("08", "40", "53", "57", "55P03", "25006", "58");

	// Redis error replies while a replica is promoted, a dataset loads or a cluster
	// reshards, while memory is full, a script runs or snapshots fail, or too few replicas
	// are in sync: the command may succeed once that ends
	private static final List<String> REDIS_REPLIES = List.of("READONLY", "LOADING", "MASTERDOWN", "CLUSTERDOWN",
			"TRYAGAIN", "BUSY", "OOM", "NOREPLICAS", "MISCONF");

	private static final String REDIS_REPLY_EXCEPTION = "io.lettuce.core.RedisCommandExecutionException";

	// Redis 6 and older wrap the reply to a write inside a script: "ERR Error running script
	// (call to f_…): @user_script:3: -READONLY …"
	private static final String SCRIPT_REPLY = ": -";

	private static final int MAX_DEPTH = 32;

	private InfrastructureFailures() {
	}

	/**
	 * Return whether the failure, or one of its causes, is a failure of the
	 * infrastructure rather than of the application.
	 * @param failure the failure
	 * @return {@code true} for an infrastructure failure
	 */
	public static boolean isInfrastructureFailure(@Nullable Throwable failure) {
		return isInfrastructureFailure(failure, 0);
	}

	// Suppressed exceptions count: a listener's failure carries the failed rollback after
	// it (a dead connection) as suppressed.
	private static boolean isInfrastructureFailure(@Nullable Throwable failure, int depth) {
		Throwable cause = failure;
		for (int level = depth; cause != null && level < MAX_DEPTH; level++) {
			if (isInfrastructure(cause)) {
				return true;
			}
			for (Throwable suppressed : cause.getSuppressed()) {
				if (isInfrastructureFailure(suppressed, level + 1)) {
					return true;
				}
			}
			cause = (cause.getCause() != cause) ? cause.getCause() : null;
		}
		return false;
	}

	// by name, with its subclasses (Lettuce raises some replies as such), so that Lettuce
	// stays optional
	private static boolean isRedisReply(Class<?> type) {
		for (Class<?> each = type; each != null; each = each.getSuperclass()) {
			if (each.getName().equals(REDIS_REPLY_EXCEPTION)) {
				return true;
			}
		}
		return false;
	}

	private static boolean isRetryableRedisReply(String message) {
		String reply = message;
		int inScript = message.startsWith("ERR") ? message.lastIndexOf(SCRIPT_REPLY) : -1;
		if (inScript >= 0) {
			reply = message.substring(inScript + SCRIPT_REPLY.length());
		}
		for (String retryable : REDIS_REPLIES) {
			if (reply.startsWith(retryable + " ") || reply.equals(retryable)) {
				return true;
			}
		}
		return false;
	}

	private static boolean isInfrastructure(Throwable ex) {
		if (ex instanceof IdempotencyKeyInProgressException || ex instanceof DataAccessResourceFailureException
				|| ex instanceof RecoverableDataAccessException || ex instanceof CannotCreateTransactionException
				|| ex instanceof SQLTransientException || ex instanceof SQLRecoverableException
				|| ex instanceof SQLNonTransientConnectionException) {
			return true;
		}
		if (ex instanceof TransientDataAccessException) {
			// a stale entity stays stale however often the record is retried
			return !(ex instanceof OptimisticLockingFailureException);
		}
		if (ex.getMessage() != null && isRedisReply(ex.getClass()) && isRetryableRedisReply(ex.getMessage())) {
			return true;
		}
		if (ex instanceof SQLException sql && sql.getSQLState() != null) {
			return SQL_STATES.stream().anyMatch(sql.getSQLState()::startsWith);
		}
		return false;
	}

}
