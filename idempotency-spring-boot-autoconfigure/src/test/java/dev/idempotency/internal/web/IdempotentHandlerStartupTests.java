package dev.idempotency.internal.web;

import java.net.URI;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplications;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code @Idempotent} handlers that cannot be made idempotent stop the application at
 * start-up, with a message that names the handler and says why.
 */
class IdempotentHandlerStartupTests {

	@Test
	void refusesAHandlerWhoseResponseIsStreamed() {
		assertThatThrownBy(() -> run(WebApplicationType.SERVLET, Streaming.class))
			.hasStackTraceContaining("@Idempotent handler Streaming.events returns SseEmitter");
	}

	@Test
	void refusesAHandlerWhoseResponseIsWrittenLater() {
		assertThatThrownBy(() -> run(WebApplicationType.SERVLET, Later.class))
			.hasStackTraceContaining("@Idempotent handler Later.pay returns CompletableFuture");
	}

	@Test
	void refusesAHandlerOutsideAServletApplication() {
		assertThatThrownBy(() -> run(WebApplicationType.NONE, Later.class))
			.hasStackTraceContaining("Later.pay is a web handler")
			.hasStackTraceContaining("need a Spring MVC (servlet) application: WebFlux");
	}

	@Test
	void refusesAHandlerWhenTheWebSupportIsSwitchedOff() {
		assertThatThrownBy(() -> run(WebApplicationType.SERVLET, Later.class, "idempotency.web.enabled=false"))
			.hasStackTraceContaining("Later.pay is a web handler, and idempotency.web.enabled is false");
	}

	@Test
	void interceptsTheHandlersOfLazyControllers() {
		Lazy.runs.set(0);
		try (ConfigurableApplicationContext context = TestApplications.run(WebApplicationType.SERVLET,
				new Class<?>[] { App.class, Lazy.class }, TestApplications.WITHOUT_JPA,
				"spring.main.lazy-initialization=true")) {
			URI uri = URI.create("http://localhost:" + context.getEnvironment().getProperty("local.server.port")
					+ "/lazy");
			String key = UUID.randomUUID().toString();
			assertThat(TestHttp.post(uri, key, "{}").statusCode()).isEqualTo(200);
			assertThat(TestHttp.post(uri, key, "{}").headers().firstValue(StoredResponse.REPLAYED)).hasValue("true");
			assertThat(Lazy.runs).hasValue(1);
		}
	}

	private static void run(WebApplicationType type, Class<?> controller, String... properties) {
		String[] all = new String[properties.length + 1];
		all[0] = TestApplications.WITHOUT_JPA;
		System.arraycopy(properties, 0, all, 1, properties.length);
		TestApplications.run(type, new Class<?>[] { App.class, controller }, all).close();
	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class App {

	}

	@RestController
	static class Lazy {

		static final AtomicInteger runs = new AtomicInteger();

		@PostMapping("/lazy")
		@Idempotent
		String pay() {
			return "paid " + runs.incrementAndGet();
		}

	}

	@RestController
	static class Streaming {

		@PostMapping("/events")
		@Idempotent
		SseEmitter events() {
			return new SseEmitter();
		}

	}

	@RestController
	static class Later {

		@PostMapping("/later")
		@Idempotent
		ResponseEntity<CompletableFuture<String>> pay() {
			return ResponseEntity.ok(CompletableFuture.completedFuture("paid"));
		}

	}

}
