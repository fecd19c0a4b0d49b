package dev.idempotency.internal.consumer;

import java.sql.SQLException;

import dev.idempotency.IdempotencyKeyInProgressException;
import io.lettuce.core.RedisCommandExecutionException;
import org.junit.jupiter.api.Test;

import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.dao.OptimisticLockingFailureException;
import org.springframework.dao.QueryTimeoutException;
import org.springframework.data.redis.RedisSystemException;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.transaction.TransactionSystemException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link InfrastructureFailures}.
 */
class InfrastructureFailuresUnitTests {

	@Test
	void unreachableOrBusyInfrastructureIsAnInfrastructureFailure() {
		assertThat(InfrastructureFailures.isInfrastructureFailure(new CannotAcquireLockException("lock timeout")))
			.isTrue();
		assertThat(InfrastructureFailures.isInfrastructureFailure(new QueryTimeoutException("statement timeout")))
			.isTrue();
		assertThat(InfrastructureFailures.isInfrastructureFailure(new DataAccessResourceFailureException("down")))
			.isTrue();
		assertThat(InfrastructureFailures.isInfrastructureFailure(new CannotCreateTransactionException("no pool")))
			.isTrue();
		assertThat(InfrastructureFailures.isInfrastructureFailure(new IdempotencyKeyInProgressException("held elsewhere")))
			.isTrue();
	}

	@Test
	void sqlStatesOfConnectionsShutdownsAndConflictsCountAnywhereInTheCauseChain() {
		for (String state : new String[] { "08006", "57P01", "57P03", "53300", "40001", "40P01", "55P03" }) {
			RuntimeException wrapped = new IllegalStateException("listener failed",
					new SQLException("server said no", state));
			assertThat(InfrastructureFailures.isInfrastructureFailure(wrapped)).as(state).isTrue();
		}
	}

	@Test
	void failoverAnswersCount() {
		// a write on a standby, an I/O error of the server
		for (String state : new String[] { "25006", "58030" }) {
			assertThat(InfrastructureFailures.isInfrastructureFailure(new IllegalStateException("listener failed",
					new SQLException("server said no", state)))).as(state).isTrue();
		}
		// Redis answers while a replica is promoted, a dataset loads or a cluster reshards
		for (String reply : new String[] { "READONLY You can't write against a read only replica.",
				"LOADING Redis is loading the dataset in memory", "MASTERDOWN Link with MASTER is down",
				"CLUSTERDOWN The cluster is down", "TRYAGAIN Multiple keys request during rehashing of slot" }) {
			assertThat(InfrastructureFailures.isInfrastructureFailure(
					new RedisSystemException("Error in execution", new RedisCommandExecutionException(reply))))
				.as(reply).isTrue();
		}
		assertThat(InfrastructureFailures.isInfrastructureFailure(new RedisSystemException("Error in execution",
				new RedisCommandExecutionException("ERR wrong number of arguments")))).isFalse();
	}

	@Test
	void redisRepliesCountAsLettuceRaisesThem() {
		// Lettuce raises subclasses for some replies; Redis 6 wraps a reply to a script's
		// write in an ERR; a full memory or a running script clears too
		for (String reply : new String[] { "READONLY You can't write against a read only replica.",
				"LOADING Redis is loading the dataset in memory", "BUSY Redis is busy running a script.",
				"OOM command not allowed when used memory > 'maxmemory'.",
				"ERR Error running script (call to f_0855): @user_script:3: @user_script: 3: -READONLY You can't "
						+ "write against a read only replica.",
				"ERR Error running script (call to f_0855): @user_script:3: -OOM command not allowed when used "
						+ "memory > 'maxmemory'.",
				"NOREPLICAS Not enough good replicas to write.",
				"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk." }) {
			assertThat(InfrastructureFailures.isInfrastructureFailure(new RedisSystemException("Error in execution",
					io.lettuce.core.internal.ExceptionFactory.createExecutionException(reply))))
				.as(reply).isTrue();
		}
		assertThat(InfrastructureFailures.isInfrastructureFailure(new RedisSystemException("Error in execution",
				io.lettuce.core.internal.ExceptionFactory.createExecutionException(
						"ERR Error running script (call to f_0855): @user_script:3: user_script:3: Script attempted "
								+ "to access nonexistent global variable 'x'"))))
			.isFalse();
	}

	@Test
	void aFailedRollbackAttachedToTheListenersFailureCounts() {
		IllegalStateException failure = new IllegalStateException("listener failed on a dead connection");
		failure.addSuppressed(new TransactionSystemException("JDBC rollback failed",
				new SQLException("terminating connection due to administrator command", "57P01")));
		assertThat(InfrastructureFailures.isInfrastructureFailure(failure)).isTrue();
	}

	@Test
	void failuresOfTheApplicationDoNotCount() {
		assertThat(InfrastructureFailures.isInfrastructureFailure(new IllegalStateException("poison"))).isFalse();
		assertThat(InfrastructureFailures.isInfrastructureFailure(new OptimisticLockingFailureException("stale")))
			.isFalse();
		assertThat(InfrastructureFailures.isInfrastructureFailure(new DataIntegrityViolationException("duplicate",
				new SQLException("unique violation", "23505"))))
			.isFalse();
		assertThat(InfrastructureFailures.isInfrastructureFailure(null)).isFalse();
	}

}
