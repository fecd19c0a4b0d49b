package dev.idempotency.internal.web;

import java.io.IOException;
import java.security.Principal;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import dev.idempotency.Idempotent;
import dev.idempotency.StoredResultCodec;
import dev.idempotency.internal.key.StoredKey;
import dev.idempotency.internal.store.JdbcClaimRows;
import dev.idempotency.internal.web.BufferedRequest.RequestTooLargeException;
import dev.idempotency.internal.web.Problems.Problem;
import dev.idempotency.internal.web.RequestKeys.InvalidRequestKeyException;
import dev.idempotency.metrics.DecisionSource;
import dev.idempotency.metrics.IdempotencyMetrics;
import dev.idempotency.metrics.IdempotencyMetrics.ListenerMetrics;
import dev.idempotency.metrics.Outcome;
import dev.idempotency.store.LeaseStore;
import dev.idempotency.store.ProcessedMessage;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.core.Ordered;
import org.springframework.transaction.support.TransactionOperations;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.servlet.HandlerMapping;
import org.springframework.util.function.SingletonSupplier;

/**
 * Runs requests to {@code @Idempotent} Spring MVC handlers at most once per idempotency
 * key: finds the request's handler, reads its key and body, claims the key in its scope
 * (the endpoint, and the authenticated principal if there is one), and runs the handler
 * in the handler's mode; a retried request gets the stored response, marked
 * {@code Idempotent-Replayed: true}. Other requests pass through untouched.
 */
public final class IdempotentRequestFilter extends OncePerRequestFilter implements Ordered {

	/**
	 * The name of the request's messages in the store's {@code topic} column.
	 */
	static final String TOPIC = "http";

	private final IdempotentHandlers handlers;

	private final HandlerLookup lookup;

	private final WebSettings settings;

	private final Supplier<Exchanges> exchanges;

	private final Map<EndpointPlan, ListenerMetrics> handlerMetrics = new ConcurrentHashMap<>();

	private final int order;

	/**
	 * Create the filter.
	 * @param handlers the idempotent handlers
	 * @param mappings supplies the handler mappings of annotated controllers
	 * @param settings the settings
	 * @param claims supplies what the filter claims keys with, on the first request to an
	 * idempotent handler, so that creating the filter with the web server does not create
	 * the store
	 * @param order the filter's order
	 */
	public IdempotentRequestFilter(IdempotentHandlers handlers, Supplier<List<HandlerMapping>> mappings,
			WebSettings settings, Supplier<Claims> claims, int order) {
		this.handlers = handlers;
		this.lookup = new HandlerLookup(mappings);
		this.settings = settings;
		this.exchanges = SingletonSupplier.of(() -> new Exchanges(claims.get(), settings));
		this.order = order;
	}

	/**
	 * Create what the filter claims keys with now, so that an application that cannot
	 * serve its idempotent handlers stops at start-up.
	 */
	public void prepare() {
		this.exchanges.get();
	}

	@Override
	public int getOrder() {
		return this.order;
	}

	@Override
	protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
			throws ServletException, IOException {
		HandlerLookup.Found found = this.handlers.mayHandle(request.getMethod()) ? this.lookup.find(request) : null;
		EndpointPlan plan = (found != null) ? this.handlers.plan(found.handler().getMethod()) : null;
		if (plan == null) {
			chain.doFilter(request, response);
			return;
		}
		Exchanges exchanges = this.exchanges.get();
		ListenerMetrics metrics = this.handlerMetrics.computeIfAbsent(plan,
				(key) -> exchanges.metrics.listener(key.name(), "jdbc"));
		String key;
		try {
			key = RequestKeys.of(request, this.settings, plan.key());
		}
		catch (InvalidRequestKeyException ex) {
			metrics.message(Outcome.REJECTED, DecisionSource.NONE);
			exchanges.problems.write(request, response, Problem.KEY_INVALID, ex.getMessage());
			return;
		}
		if (key == null) {
			if (!this.settings.rejectMissingKey()) {
				chain.doFilter(request, response);
				return;
			}
			metrics.message(Outcome.REJECTED, DecisionSource.NONE);
			exchanges.problems.write(request, response, Problem.KEY_MISSING, "This endpoint requires an idempotency key in "
					+ "the " + this.settings.keyHeader() + " header");
			return;
		}
		BufferedRequest buffered;
		try {
			buffered = BufferedRequest.read(request, this.settings.maxRequestSize());
		}
		catch (RequestTooLargeException ex) {
			metrics.message(Outcome.REJECTED, DecisionSource.NONE);
			exchanges.problems.write(request, response, Problem.REQUEST_TOO_LARGE, ex.getMessage());
			return;
		}
		ProcessedMessage message = new ProcessedMessage(StoredKey.of(scope(plan, found, request)), StoredKey.of(key),
				TOPIC, -1, -1);
		IdempotentRequest idempotent = new IdempotentRequest(plan, buffered, response, chain, message,
				buffered.fingerprint(this.settings.fingerprintHeaders()), metrics);
		// a retry of a request that completed is answered from its row, without a claim
		JdbcClaimRows.Row completed = exchanges.rows.readCompleted(message);
		if (completed != null) {
			Replays.answer(exchanges.json, exchanges.problems, idempotent, completed.fingerprint(), completed.result());
		}
		else if (plan.mode() == Idempotent.Mode.LEASE) {
			exchanges.lease.handle(idempotent);
		}
		else {
			exchanges.transactional.handle(idempotent);
		}
	}

	/**
	 * Return the scope of a request's key: the annotation's scope, or the endpoint (the
	 * method and the path pattern), followed by the authenticated principal, so that one
	 * client can never get another's stored response by sending its key.
	 */
	static String scope(EndpointPlan plan, HandlerLookup.Found found, HttpServletRequest request) {
		String scope = (plan.scope() != null) ? plan.scope()
				: TOPIC + " " + request.getMethod() + " " + found.pattern();
		Principal principal = request.getUserPrincipal();
		return (principal != null) ? scope + " |principal=" + principal.getName() : scope;
	}

	/**
	 * What the filter claims keys with.
	 *
	 * @param rows the claims of the transactional mode
	 * @param leases the claims of the lease mode
	 * @param transactions runs the transactional mode's new transactions
	 * @param json writes and reads stored responses and problem details
	 * @param metrics the meters
	 */
	public record Claims(JdbcClaimRows rows, LeaseStore leases, TransactionOperations transactions,
			StoredResultCodec json, IdempotencyMetrics metrics) {
	}

	private static final class Exchanges {

		private final Problems problems;

		private final TransactionalExchange transactional;

		private final LeaseExchange lease;

		private final IdempotencyMetrics metrics;

		private final JdbcClaimRows rows;

		private final StoredResultCodec json;

		Exchanges(Claims claims, WebSettings settings) {
			this.rows = claims.rows();
			this.json = claims.json();
			this.problems = new Problems(claims.json());
			this.transactional = new TransactionalExchange(claims.rows(), claims.transactions(), claims.json(),
					settings, this.problems);
			this.lease = new LeaseExchange(claims.leases(), claims.rows(), claims.json(), settings, this.problems);
			this.metrics = claims.metrics();
		}

	}

}
