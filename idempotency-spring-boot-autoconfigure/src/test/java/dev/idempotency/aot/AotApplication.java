package dev.idempotency.aot;

import dev.idempotency.Idempotent;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.KafkaListenerErrorHandler;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.messaging.Message;

/**
 * An application with the starter that {@link AotModeIntegrationTests} processes ahead of
 * time and then runs, in a JVM of its own, from the generated code.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class AotApplication {

	static final String TOPIC = "aot-events";

	static final String EFFECTS_TABLE = "aot_effects";

	public static void main(String[] args) {
		SpringApplication.run(AotApplication.class, args);
	}

	@Bean
	Listener listener(JdbcTemplate jdbc) {
		return new Listener(jdbc);
	}

	// proxied by the starter as its class: the proxy class is generated ahead of time
	@Bean
	RethrowingErrorHandler aotErrorHandler() {
		return new RethrowingErrorHandler();
	}

	// proxied by the starter as the interface it is declared as: the proxy gets a hint
	@Bean
	KafkaListenerErrorHandler lambdaErrorHandler() {
		return (message, exception) -> {
			throw exception;
		};
	}

	static class Listener {

		private final JdbcTemplate jdbc;

		Listener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "aot", topics = TOPIC, groupId = "aot", errorHandler = "aotErrorHandler")
		@Idempotent(key = "headers['event-id']")
		public void on(String value) {
			// not idempotent by itself: a second delivery would insert a second row
			this.jdbc.update("INSERT INTO " + EFFECTS_TABLE + " (value) VALUES (?)", value);
		}

	}

	static class RethrowingErrorHandler implements KafkaListenerErrorHandler {

		@Override
		public Object handleError(Message<?> message, ListenerExecutionFailedException exception) {
			throw exception;
		}

	}

}
