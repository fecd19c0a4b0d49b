package dev.idempotency.internal.web;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.Principal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.key.StoredKey;
import dev.idempotency.test.RecordingListener;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.core.Ordered;
import org.springframework.http.ResponseEntity;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.interceptor.TransactionAspectSupport;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.util.ContentCachingResponseWrapper;
import org.springframework.web.util.WebUtils;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code @Idempotent} Spring MVC handlers in the transactional mode, on a real Tomcat and
 * a real PostgreSQL: each request runs its handler once per key, and retries get the
 * stored response.
 */
class IdempotentHandlerIntegrationTests {

	static final String KEY = TestHttp.KEY;

	@RegisterExtension
	static final TestApplication app = TestApplication.with(Payments.class, Principals.class, CopyingFilter.class)
		.web()
		.properties(TestApplications.WITHOUT_JPA, "test.effects-table=web_effects",
				"idempotency.web.max-request-size=4KB", "idempotency.web.max-response-size=8KB",
				"server.max-http-request-header-size=64KB");

	@Test
	void runsTheHandlerOnceForFiftyConcurrentRequestsWithOneKey() throws Exception {
		String key = UUID.randomUUID().toString();
		ExecutorService executor = Executors.newFixedThreadPool(50);
		List<Future<HttpResponse<String>>> responses = new ArrayList<>();
		try {
			for (int i = 0; i < 50; i++) {
				responses.add(executor.submit(() -> post("/slow", key, "{\"amount\": 10}")));
			}
			List<String> created = new ArrayList<>();
			int conflicts = 0;
			for (Future<HttpResponse<String>> response : responses) {
				HttpResponse<String> answer = response.get();
				if (answer.statusCode() == 409) {
					conflicts++;
				}
				else {
					assertThat(answer.statusCode()).isEqualTo(201);
					created.add(answer.body());
				}
			}
			assertThat(created).hasSizeGreaterThanOrEqualTo(1).containsOnly(created.get(0));
			assertThat(created.size() + conflicts).isEqualTo(50);
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(effects(key)).isEqualTo(1);
	}

	@Test
	void replaysTheStoredResponseByteForByte() throws Exception {
		String key = UUID.randomUUID().toString();
		HttpResponse<String> first = post("/payments", key, "{\"amount\": 10}");
		HttpResponse<String> second = post("/payments", key, "{\"amount\": 10}");
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(first.headers().firstValue(StoredResponse.REPLAYED)).isEmpty();
		assertThat(second.statusCode()).isEqualTo(201);
		assertThat(second.body()).isEqualTo(first.body());
		assertThat(second.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
		assertThat(second.headers().firstValue("ETag")).isEqualTo(first.headers().firstValue("ETag")).isPresent();
		assertThat(second.headers().firstValue("Content-Type")).isEqualTo(first.headers().firstValue("Content-Type"));
		assertThat(second.headers().firstValue(StoredResponse.REPLAYED)).hasValue("true");
		assertThat(second.headers().firstValue("X-Not-Replayed")).isEmpty();
		assertThat(effects(key)).isEqualTo(1);
	}

	@Test
	void takesTheQuotedFormOfTheKeyForThePlainOne() throws Exception {
		String key = UUID.randomUUID().toString();
		HttpResponse<String> plain = post("/payments", key, "{\"amount\": 10}");
		HttpResponse<String> quoted = post("/payments", "\"" + key + "\"", "{\"amount\": 10}");
		assertThat(quoted.body()).isEqualTo(plain.body());
		assertThat(quoted.headers().firstValue(StoredResponse.REPLAYED)).hasValue("true");
		assertThat(effects(key)).isEqualTo(1);
	}

	@Test
	void answers422ToAKeyReusedWithAnotherRequestAndChangesNothing() throws Exception {
		String key = UUID.randomUUID().toString();
		post("/payments", key, "{\"amount\": 10}");
		HttpResponse<String> reused = post("/payments", key, "{\"amount\": 11}");
		assertThat(reused.statusCode()).isEqualTo(422);
		assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		assertThat(reused.body()).contains("\"code\":\"idempotency-key-reused\"");
		assertThat(effects(key)).isEqualTo(1);
	}

	@Test
	void answersBadKeysWithProblemDetailsAndStoresNothing() throws Exception {
		String count = "SELECT count(*) FROM processed_messages WHERE consumer_group LIKE 'http POST /payments%'";
		int before = app.rows(count);
		assertProblem(post("/payments", null, "{}"), 400, "idempotency-key-missing");
		List<String> bad = List.of("k".repeat(10_000), "a\tb", "\"unclosed", "\"a\"b\"");
		for (String key : bad) {
			assertProblem(post("/payments", key, "{}"), 400, "idempotency-key-invalid");
		}
		// exact stored forms: a pattern such as 'a%b' would also match another test's random key
		for (String key : bad) {
			assertThat(claims(StoredKey.of(key))).as(key).isZero();
			assertThat(claims(StoredKey.of(key.replace("\"", "")))).as(key).isZero();
		}
		assertThat(app.rows(count)).isEqualTo(before);
	}

	@Test
	void answers413ToABodyOverTheLimitAndStoresNothing() throws Exception {
		String key = UUID.randomUUID().toString();
		assertProblem(post("/payments", key, "{\"note\": \"" + "x".repeat(5000) + "\"}"), 413,
				"idempotent-request-too-large");
		assertThat(claims(key)).isZero();
	}

	@Test
	void digestsAKeyLongerThanTheColumn() throws Exception {
		String key = UUID.randomUUID() + "-".repeat(300);
		assertThat(post("/payments", key, "{\"amount\": 10}").statusCode()).isEqualTo(201);
		assertThat(post("/payments", key, "{\"amount\": 10}").headers().firstValue(StoredResponse.REPLAYED))
			.hasValue("true");
		assertThat(effects(key)).isEqualTo(1);
	}

	@Test
	void rollsBackAndReleasesTheKeyOfAFailedHandler() throws Exception {
		String key = UUID.randomUUID().toString();
		int runs = Payments.broken.get();
		assertThat(post("/broken", key, "{}").statusCode()).isEqualTo(500);
		assertThat(post("/broken", key, "{}").statusCode()).isEqualTo(500);
		assertThat(Payments.broken.get() - runs).isEqualTo(2);
		assertThat(effects(key)).isZero();
		assertThat(claims(key)).isZero();
	}

	@Test
	void storesAClientErrorTheHandlerReturned() throws Exception {
		String key = UUID.randomUUID().toString();
		HttpResponse<String> first = post("/declined", key, "{}");
		HttpResponse<String> second = post("/declined", key, "{}");
		assertThat(first.statusCode()).isEqualTo(402);
		assertThat(second.statusCode()).isEqualTo(402);
		assertThat(second.body()).isEqualTo(first.body());
		assertThat(second.headers().firstValue(StoredResponse.REPLAYED)).hasValue("true");
		assertThat(effects(key)).isEqualTo(1);
	}

	@Test
	void refusesAResponseOverTheLimitAndRollsItsWorkBack() throws Exception {
		String key = UUID.randomUUID().toString();
		assertProblem(post("/big", key, "{}"), 500, "idempotent-response-not-stored");
		assertThat(effects(key)).isZero();
		assertThat(claims(key)).isZero();
	}

	@Test
	void scopesKeysByTheAuthenticatedPrincipal() throws Exception {
		String key = UUID.randomUUID().toString();
		HttpResponse<String> alice = send(request("/payments", key, "{\"amount\": 10}").header("X-User", "alice"));
		HttpResponse<String> bob = send(request("/payments", key, "{\"amount\": 10}").header("X-User", "bob"));
		HttpResponse<String> aliceAgain = send(
				request("/payments", key, "{\"amount\": 10}").header("X-User", "alice"));
		assertThat(alice.statusCode()).isEqualTo(201);
		assertThat(bob.statusCode()).isEqualTo(201);
		assertThat(bob.body()).isNotEqualTo(alice.body());
		assertThat(bob.headers().firstValue(StoredResponse.REPLAYED)).isEmpty();
		assertThat(aliceAgain.body()).isEqualTo(alice.body());
		assertThat(effects(key)).isEqualTo(2);
	}

	@Test
	void rollsBackWorkWhoseExceptionWasAnsweredWithASuccess() throws Exception {
		String key = UUID.randomUUID().toString();
		assertProblem(post("/handled", key, "{}"), 500, "idempotent-response-not-stored");
		assertThat(effects(key)).isZero();
		assertThat(claims(key)).isZero();
	}

	@Test
	void answersARolledBackRedirectWithAProblemDetail() throws Exception {
		String key = UUID.randomUUID().toString();
		assertProblem(post("/redirect-rolled-back", key, "{}"), 500, "idempotent-response-not-stored");
		assertThat(effects(key)).isZero();
		assertThat(claims(key)).isZero();
	}

	@Test
	void storesARedirect() throws Exception {
		String key = UUID.randomUUID().toString();
		HttpResponse<String> first = post("/redirect", key, "{}");
		HttpResponse<String> second = post("/redirect", key, "{}");
		assertThat(first.statusCode()).isEqualTo(303);
		assertThat(second.statusCode()).isEqualTo(303);
		assertThat(second.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"))
			.isPresent();
		assertThat(second.headers().firstValue(StoredResponse.REPLAYED)).hasValue("true");
		assertThat(effects(key)).isEqualTo(1);
	}

	@Test
	void leavesOtherHandlersAlone() throws Exception {
		HttpResponse<String> plain = post("/plain", null, "{}");
		assertThat(plain.statusCode()).isEqualTo(200);
		assertThat(plain.body()).isEqualTo("plain");
	}

	private static void assertProblem(HttpResponse<String> response, int status, String code) {
		assertThat(response.statusCode()).isEqualTo(status);
		assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		assertThat(response.body()).contains("\"status\":" + status).contains("\"code\":\"" + code + "\"");
	}

	static int effects(String key) {
		return app.rows("SELECT count(*) FROM web_effects WHERE message_key = ?", key);
	}

	static int claims(String key) {
		return app.rows("SELECT count(*) FROM processed_messages WHERE consumer_group LIKE 'http %' "
				+ "AND idempotency_key = ?", key);
	}

	static HttpResponse<String> post(String path, String key, String body) {
		return TestHttp.post(app.uri(path), key, body);
	}

	static HttpRequest.Builder request(String path, String key, String body) {
		return TestHttp.request(app.uri(path), key, body);
	}

	static HttpResponse<String> send(HttpRequest.Builder request) {
		return TestHttp.send(request);
	}

	@RestController
	static class Payments extends RecordingListener {

		static final AtomicInteger broken = new AtomicInteger();

		@PostMapping("/payments")
		@Idempotent
		ResponseEntity<Map<String, Object>> pay(@RequestBody Map<String, Object> body, HttpServletRequest request) {
			String key = key(request);
			effects().add("payments", key);
			UUID id = UUID.randomUUID();
			return ResponseEntity.created(URI.create("/payments/" + id))
				.eTag("\"" + id + "\"")
				.header("X-Not-Replayed", "yes")
				.body(Map.of("id", id.toString(), "amount", String.valueOf(body.get("amount"))));
		}

		@PostMapping("/slow")
		@Idempotent
		ResponseEntity<Map<String, Object>> slow(@RequestBody Map<String, Object> body, HttpServletRequest request)
				throws InterruptedException {
			Thread.sleep(300);
			return pay(body, request);
		}

		@PostMapping("/broken")
		@Idempotent
		String broken(HttpServletRequest request) {
			effects().add("payments", key(request));
			broken.incrementAndGet();
			throw new IllegalStateException("the handler failed");
		}

		@PostMapping("/declined")
		@Idempotent
		ResponseEntity<String> declined(HttpServletRequest request) {
			effects().add("payments", key(request));
			return ResponseEntity.status(402).body("declined " + UUID.randomUUID());
		}

		@PostMapping("/big")
		@Idempotent
		String big(HttpServletRequest request) {
			effects().add("payments", key(request));
			return "x".repeat(10_000);
		}

		@PostMapping("/handled")
		@Idempotent
		String handled(HttpServletRequest request) {
			effects().add("payments", key(request));
			throw new HandledException();
		}

		@ExceptionHandler(HandledException.class)
		ResponseEntity<String> onHandled() {
			return ResponseEntity.ok("handled");
		}

		@PostMapping("/redirect")
		@Idempotent
		void redirect(HttpServletRequest request, HttpServletResponse response) throws IOException {
			effects().add("payments", key(request));
			response.sendRedirect("/payments/" + UUID.randomUUID(), 303, true);
		}

		@PostMapping("/redirect-rolled-back")
		@Idempotent
		@Transactional
		void redirectRolledBack(HttpServletRequest request, HttpServletResponse response) throws IOException {
			effects().add("payments", key(request));
			response.sendRedirect("/payments/" + UUID.randomUUID(), 303, true);
			TransactionAspectSupport.currentTransactionStatus().setRollbackOnly();
		}

		@PostMapping("/plain")
		String plain() {
			return "plain";
		}

		private static String key(HttpServletRequest request) {
			String key = request.getHeader(KEY);
			return key.startsWith("\"") ? key.substring(1, key.length() - 1) : key;
		}

	}

	static class HandledException extends RuntimeException {

		private static final long serialVersionUID = 1L;

	}

	/**
	 * Copies a cached body to the client after the chain, as a logging filter that caches
	 * responses does, inside the filter of idempotent handlers.
	 */
	static class CopyingFilter implements Filter, Ordered {

		@Override
		public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
				throws IOException, ServletException {
			chain.doFilter(request, response);
			ContentCachingResponseWrapper cached = WebUtils.getNativeResponse(response,
					ContentCachingResponseWrapper.class);
			if (cached != null) {
				cached.copyBodyToResponse();
			}
		}

		@Override
		public int getOrder() {
			return 10;
		}

	}

	/**
	 * Authenticates requests by their {@code X-User} header, as a security filter would,
	 * before the filter of idempotent handlers.
	 */
	static class Principals implements Filter, Ordered {

		@Override
		public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
				throws IOException, ServletException {
			HttpServletRequest http = (HttpServletRequest) request;
			String user = http.getHeader("X-User");
			chain.doFilter((user == null) ? request : new HttpServletRequestWrapper(http) {

				@Override
				public Principal getUserPrincipal() {
					return () -> user;
				}

			}, response);
		}

		@Override
		public int getOrder() {
			return -100;
		}

	}

}
