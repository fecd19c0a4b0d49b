package dev.idempotency.internal.web;

import java.io.IOException;

import dev.idempotency.StoredResultCodec;
import dev.idempotency.internal.web.Problems.Problem;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.Outcome;
import org.jspecify.annotations.Nullable;

/**
 * Answers a request whose key was claimed before: 422 when the first request was another
 * one (its fingerprint differs), the stored response when there is one, else 409.
 */
final class Replays {

	private Replays() {
	}

	static void answer(StoredResultCodec json, Problems problems, IdempotentRequest request,
			@Nullable String storedFingerprint, @Nullable String storedResponse) throws IOException {
		if (storedFingerprint != null && !storedFingerprint.equals(request.fingerprint())) {
			request.metrics().message(Outcome.REJECTED, DecisionSource.STORE);
			problems.write(request.request(), request.response(), Problem.KEY_REUSED,
					"This idempotency key was used for another request (method, path, body or headers); "
							+ "use a new key for a new request");
			return;
		}
		if (storedResponse == null) {
			request.metrics().message(Outcome.REJECTED, DecisionSource.STORE);
			problems.write(request.request(), request.response(), Problem.IN_PROGRESS,
					"A request with this idempotency key is being processed; retry later");
			return;
		}
		StoredResponse stored = (StoredResponse) json.read(storedResponse, StoredResponse.class);
		if (stored == null) {
			throw new IllegalStateException("The stored response of " + request.plan().name() + " is null");
		}
		request.metrics().message(Outcome.DUPLICATE, DecisionSource.STORE);
		stored.replay(request.response());
	}

}
