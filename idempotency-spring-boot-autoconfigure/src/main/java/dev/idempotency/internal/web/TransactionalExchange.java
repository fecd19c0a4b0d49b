package dev.idempotency.internal.web;

import java.io.IOException;

import dev.idempotency.IdempotencyKeyInProgressException;
import dev.idempotency.StoredResultCodec;
import dev.idempotency.internal.store.JdbcClaimRows;
import dev.idempotency.internal.web.IdempotentRequest.HandlerFailure;
import dev.idempotency.internal.web.Problems.Problem;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.Outcome;
import jakarta.servlet.ServletException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionOperations;

/**
 * The transactional mode of idempotent handlers: the claim of the key, the handler's
 * database work and the stored response commit in one new transaction, or none of them
 * does. A concurrent request with the same key waits on the claim (at most
 * {@code idempotency.lock-timeout}, then 409) and, once the first commits, gets its
 * response. The client gets the response only after the commit, so a response it gets is
 * the response of work that committed.
 */
final class TransactionalExchange {

	private static final Log logger = LogFactory.getLog(TransactionalExchange.class);

	private final JdbcClaimRows rows;

	private final TransactionOperations transactions;

	private final StoredResultCodec json;

	private final WebSettings settings;

	private final Problems problems;

	TransactionalExchange(JdbcClaimRows rows, TransactionOperations transactions, StoredResultCodec json,
			WebSettings settings, Problems problems) {
		this.rows = rows;
		this.transactions = transactions;
		this.json = json;
		this.settings = settings;
		this.problems = problems;
	}

	void handle(IdempotentRequest request) throws IOException, ServletException {
		BufferedResponse response = new BufferedResponse(request.response());
		Decision decision;
		try {
			decision = this.transactions.execute((status) -> claimAndRun(request, response, status));
		}
		catch (HandlerFailure failure) {
			request.metrics().message(Outcome.FAILED, DecisionSource.NONE);
			request.discardResponse();
			throw failure.rethrow();
		}
		catch (IdempotencyKeyInProgressException | PessimisticLockingFailureException ex) {
			request.metrics().message(Outcome.REJECTED, DecisionSource.STORE);
			this.problems.write(request.request(), request.response(), Problem.IN_PROGRESS,
					"A request with this idempotency key is being processed; retry later");
			return;
		}
		catch (RuntimeException | Error ex) {
			// the commit failed (or the claim): nothing of the handler's response goes out
			request.discardResponse();
			throw ex;
		}
		if (decision == null) {
			throw new IllegalStateException("No decision for " + request.plan().name());
		}
		decision.answer(this, request, response);
	}

	private Decision claimAndRun(IdempotentRequest request, BufferedResponse response, TransactionStatus status) {
		long start = System.nanoTime();
		boolean claimed = this.rows.claim(request.message(), request.fingerprint()).isNew();
		request.metrics().claim(System.nanoTime() - start);
		if (!claimed) {
			return new Duplicate(this.rows.read(request.message()));
		}
		request.proceed(response);
		String notStored = request.notStored(response, this.settings.storeClientErrors());
		if (notStored == null && status.isRollbackOnly()) {
			notStored = "its transaction was marked rollback-only";
		}
		if (notStored == null && response.getContentSize() > this.settings.maxResponseSize()) {
			notStored = "its body has " + response.getContentSize() + " bytes, more than idempotency.web."
					+ "max-response-size (" + this.settings.maxResponseSize() + " bytes)";
		}
		if (notStored != null) {
			status.setRollbackOnly();
			return new RolledBack(notStored);
		}
		StoredResponse stored = StoredResponse.of(response, this.settings.replayedHeaders());
		this.rows.storeResult(request.message(), this.json.write(stored));
		return new Committed();
	}

	/**
	 * What the transaction decided, and how the client is answered once it ended.
	 */
	private sealed interface Decision permits Committed, RolledBack, Duplicate {

		void answer(TransactionalExchange exchange, IdempotentRequest request, BufferedResponse response)
				throws IOException;

	}

	/**
	 * The handler ran and its work and response committed with the claim.
	 */
	private record Committed() implements Decision {

		@Override
		public void answer(TransactionalExchange exchange, IdempotentRequest request, BufferedResponse response)
				throws IOException {
			request.metrics().message(Outcome.PROCESSED, DecisionSource.NONE);
			response.release();
		}

	}

	/**
	 * The handler ran and everything was rolled back: the key is free for a retry.
	 */
	private record RolledBack(String reason) implements Decision {

		@Override
		public void answer(TransactionalExchange exchange, IdempotentRequest request, BufferedResponse response)
				throws IOException {
			request.metrics().message(Outcome.FAILED, DecisionSource.NONE);
			if (logger.isDebugEnabled()) {
				logger.debug("Rolled back " + request.plan().name() + " and released its key: its response is not "
						+ "stored, as " + this.reason);
			}
			if (response.getStatus() < 400) {
				// a success whose work was rolled back must not reach the client
				exchange.problems.write(request.request(), request.response(), Problem.RESPONSE_NOT_STORED,
						"The response could not be stored with the request's effects, so they were rolled back: "
								+ this.reason);
				return;
			}
			response.release();
		}

	}

	/**
	 * The key was claimed before: replay its response, unless the request differs.
	 */
	private record Duplicate(JdbcClaimRows.@Nullable Row row) implements Decision {

		@Override
		public void answer(TransactionalExchange exchange, IdempotentRequest request, BufferedResponse response)
				throws IOException {
			Replays.answer(exchange.json, exchange.problems, request, (this.row != null) ? this.row.fingerprint() : null,
					(this.row != null) ? this.row.result() : null);
		}

	}

}
