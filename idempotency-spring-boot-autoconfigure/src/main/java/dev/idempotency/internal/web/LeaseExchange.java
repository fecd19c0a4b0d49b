package dev.idempotency.internal.web;

import java.io.IOException;

import dev.idempotency.IdempotencyContext;
import dev.idempotency.IdempotencyKeyInProgressException;
import dev.idempotency.StoredResultCodec;
import dev.idempotency.internal.store.JdbcClaimRows;
import dev.idempotency.internal.web.IdempotentRequest.HandlerFailure;
import dev.idempotency.internal.web.Problems.Problem;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.LeaseClaim;
import dev.idempotency.store.LeaseStore;
import jakarta.servlet.ServletException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.dao.PessimisticLockingFailureException;

/**
 * The lease mode of idempotent handlers, for effects outside the database: the claim
 * commits alone with a lease and a fencing token ({@link IdempotencyContext}), the handler
 * runs outside any transaction of the starter, and its response is stored by completing
 * the claim, fenced on the token. A request that finds a live lease gets 409; one that
 * finds an expired lease takes the key over, with a larger token. A response that cannot
 * be stored after effects outside the database marks the claim {@code FAILED}, so that
 * the handler never runs twice for the key.
 */
final class LeaseExchange {

	private static final Log logger = LogFactory.getLog(LeaseExchange.class);

	private final LeaseStore leases;

	private final JdbcClaimRows rows;

	private final StoredResultCodec json;

	private final WebSettings settings;

	private final Problems problems;

	LeaseExchange(LeaseStore leases, JdbcClaimRows rows, StoredResultCodec json, WebSettings settings,
			Problems problems) {
		this.leases = leases;
		this.rows = rows;
		this.json = json;
		this.settings = settings;
		this.problems = problems;
	}

	void handle(IdempotentRequest request) throws IOException, ServletException {
		LeaseClaim claim;
		long start = System.nanoTime();
		try {
			claim = this.leases.claim(request.message(), request.plan().lease(), request.fingerprint());
		}
		catch (IdempotencyKeyInProgressException | PessimisticLockingFailureException ex) {
			claim = new LeaseClaim(LeaseClaim.State.IN_PROGRESS, 0, false, null, null, null);
		}
		request.metrics().claim(System.nanoTime() - start);
		switch (claim.state()) {
			case ACQUIRED -> run(request, claim);
			case FAILED -> {
				request.metrics().message(Outcome.REJECTED, DecisionSource.STORE);
				this.problems.write(request.request(), request.response(), Problem.RESPONSE_NOT_STORED,
						"The first request with this idempotency key ran, but its response could not be stored: "
								+ claim.failure());
			}
			case COMPLETED -> Replays.answer(this.json, this.problems, request, claim.fingerprint(), claim.result());
			case IN_PROGRESS -> Replays.answer(this.json, this.problems, request, claim.fingerprint(), null);
		}
	}

	private void run(IdempotentRequest request, LeaseClaim claim) throws IOException, ServletException {
		long token = claim.fencingToken();
		if (claim.takenOver()) {
			logger.warn("Took over the expired lease of a request to " + request.plan().name() + " with fencing token "
					+ token + "; the request that held it stalled or died");
		}
		BufferedResponse response = new BufferedResponse(request.response());
		Object previous = IdempotencyContext.bind(request.message().key(), token);
		try {
			request.proceed(response);
		}
		catch (HandlerFailure failure) {
			request.metrics().message(Outcome.FAILED, DecisionSource.NONE);
			try {
				this.leases.release(request.message(), token);
			}
			catch (RuntimeException releaseFailure) {
				failure.getCause().addSuppressed(releaseFailure);
			}
			request.discardResponse();
			throw failure.rethrow();
		}
		finally {
			IdempotencyContext.restore(previous);
		}
		String notStored = request.notStored(response, this.settings.storeClientErrors());
		if (notStored != null) {
			request.metrics().message(Outcome.FAILED, DecisionSource.NONE);
			this.leases.release(request.message(), token);
			if (response.getStatus() < 400) {
				// a success whose key was released must not reach the client
				this.problems.write(request.request(), request.response(), Problem.RESPONSE_NOT_STORED,
						"The request failed and its key was released, so that it may be retried: " + notStored);
				return;
			}
			response.release();
			return;
		}
		if (response.getContentSize() > this.settings.maxResponseSize()) {
			String failure = "its body has " + response.getContentSize() + " bytes, more than "
					+ "idempotency.web.max-response-size (" + this.settings.maxResponseSize() + " bytes)";
			this.leases.fail(request.message(), token, "The response could not be stored: " + failure);
			request.metrics().message(Outcome.FAILED, DecisionSource.NONE);
			this.problems.write(request.request(), request.response(), Problem.RESPONSE_NOT_STORED,
					"The request ran, but its response could not be stored, so the key is marked failed: " + failure);
			return;
		}
		StoredResponse stored = StoredResponse.of(response, this.settings.replayedHeaders());
		if (!this.leases.complete(request.message(), token, this.json.write(stored))) {
			request.metrics().leaseLost();
			logger.warn("The lease of a request to " + request.plan().name() + " (fencing token " + token
					+ ") expired while its handler ran and another request took the key over; its response is not "
					+ "sent. Raise the lease above the handler's longest run");
			// one key, one answer: the one the key's owner stored, if it stored one yet
			JdbcClaimRows.Row completed = this.rows.readCompleted(request.message());
			Replays.answer(this.json, this.problems, request, (completed != null) ? completed.fingerprint() : null,
					(completed != null) ? completed.result() : null);
			return;
		}
		request.metrics().message(Outcome.PROCESSED, DecisionSource.NONE);
		response.release();
	}

}
