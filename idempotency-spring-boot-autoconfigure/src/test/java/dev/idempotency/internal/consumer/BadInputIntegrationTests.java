package dev.idempotency.internal.consumer;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.internal.key.StoredKey;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.messaging.converter.MessageConversionException;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Records and surroundings an application does not choose: keys that are empty, very long
 * or not UTF-8, a payload the listener's converter cannot read, a listener that always
 * throws, and a database that is down when the application starts. Each gets a clear
 * outcome, and nothing is lost or applied twice.
 */
class BadInputIntegrationTests {

	private static final String KEYS = "it-bad-keys";

	private static final String PAYLOADS = "it-bad-payloads";

	private static final String POISON = "it-poison";

	private static final String KEY_HEADER = TestApplication.KEY_HEADER;

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(KEYS, PAYLOADS, POISON)
		.properties(TestApplications.WITHOUT_JPA);

	@Test
	void tenThousandCharacterKeyIsAppliedOnceAndStoredAsItsDigest() {
		String prefix = UUID.randomUUID() + "-".repeat(10_000 - 37);
		String key = prefix + "a";
		String other = prefix + "b";
		assertThat(key).hasSize(10_000);
		sendBytes(KEYS, "long-1", key.getBytes(StandardCharsets.UTF_8));
		sendBytes(KEYS, "long-1-again", key.getBytes(StandardCharsets.UTF_8));
		sendBytes(KEYS, "long-2", other.getBytes(StandardCharsets.UTF_8));
		awaitConsumed(KEYS);
		assertThat(received()).contains("long-1", "long-2").doesNotContain("long-1-again");
		// the exact digests: the keys that are not UTF-8 in this class are stored as digests too
		assertThat(app.jdbc().queryForList("SELECT idempotency_key FROM processed_messages WHERE consumer_group = ? "
				+ "AND idempotency_key IN (?, ?)", String.class, KEYS, StoredKey.of(key), StoredKey.of(other)))
			.hasSize(2)
			.allSatisfy((stored) -> assertThat(stored).startsWith("sha256:").hasSize("sha256:".length() + 64));
		assertThat(recovered()).noneMatch((failure) -> failure.record().topic().equals(KEYS));
	}

	@Test
	void keyThatIsNotUtf8IsAppliedOnceAndKeptApartFromOtherBrokenKeys() {
		// both decode to the replacement character: lossy decoding would merge them
		byte[] key = { (byte) 0xFF, (byte) 0x01, (byte) 0x7F };
		byte[] other = { (byte) 0xFE, (byte) 0x01, (byte) 0x7F };
		String run = UUID.randomUUID().toString();
		sendBytes(KEYS, "binary-1-" + run, key);
		sendBytes(KEYS, "binary-1-again-" + run, key);
		sendBytes(KEYS, "binary-2-" + run, other);
		awaitConsumed(KEYS);
		assertThat(received()).contains("binary-1-" + run, "binary-2-" + run)
			.doesNotContain("binary-1-again-" + run);
		assertThat(recovered()).noneMatch((failure) -> failure.record().topic().equals(KEYS));
	}

	@Test
	void emptyKeyIsAMissingKeyAndTheRecordIsIdentifiedByItsCoordinates() {
		String run = UUID.randomUUID().toString();
		TopicPartition partition = new TopicPartition(KEYS, 0);
		long first = TestKafka.endOffset(partition);
		sendBytes(KEYS, "empty-1-" + run, new byte[0]);
		sendBytes(KEYS, "empty-2-" + run, new byte[0]);
		awaitConsumed(KEYS);
		assertThat(received()).contains("empty-1-" + run, "empty-2-" + run);
		assertThat(app.jdbc().queryForList("SELECT idempotency_key FROM processed_messages WHERE consumer_group = ? "
				+ "AND idempotency_key IN (?, ?)", String.class, KEYS, KEYS + "-0-" + first, KEYS + "-0-" + (first + 1)))
			.hasSize(2);
		assertThat(recovered()).noneMatch((failure) -> failure.record().topic().equals(KEYS));
	}

	@Test
	void payloadTheConverterCannotReadGoesToTheRecovererOnceWithoutAClaim() {
		String unreadable = UUID.randomUUID().toString();
		String readable = UUID.randomUUID().toString();
		app.send(PAYLOADS, "not a number", unreadable);
		app.send(PAYLOADS, "42", readable);
		awaitConsumed(PAYLOADS);
		assertThat(app.bean(Amounts.class).received()).contains(42L);
		assertThat(recovered()).filteredOn((failure) -> failure.record().topic().equals(PAYLOADS))
			.singleElement()
			.satisfies((failure) -> {
				assertThat(failure.record().value()).isEqualTo("not a number");
				assertThat(failure.exception()).hasCauseInstanceOf(MessageConversionException.class);
			});
		assertThat(processed(PAYLOADS, unreadable)).isZero();
		assertThat(processed(PAYLOADS, readable)).isOne();
	}

	@Test
	void listenerThatAlwaysThrowsReachesTheRecovererOnceLeavesNoKeyAndTheNextRecordIsApplied() {
		String poison = UUID.randomUUID().toString();
		String next = UUID.randomUUID().toString();
		app.send(POISON, "poison", poison);
		app.send(POISON, "fine", next);
		awaitConsumed(POISON);
		Poison listener = app.bean(Poison.class);
		// three attempts (the back-off allows two retries), then the recoverer
		assertThat(listener.attempts()).isEqualTo(3);
		assertThat(recovered()).filteredOn((failure) -> failure.record().topic().equals(POISON))
			.singleElement()
			.satisfies((failure) -> assertThat(failure.exception()).isInstanceOf(ListenerExecutionFailedException.class)
				.rootCause()
				.hasMessage("poison pill"));
		assertThat(listener.applied()).containsExactly("fine");
		assertThat(processed(POISON, poison)).isZero();
		assertThat(processed(POISON, next)).isOne();
	}

	@Test
	void databaseDownAtStartupStopsTheApplicationWithTheConnectionError() {
		int closedPort = freePort();
		assertThatThrownBy(() -> TestApplications.run(App.class, TestApplications.WITHOUT_JPA,
				"spring.datasource.url=jdbc:postgresql://127.0.0.1:" + closedPort + "/postgres",
				"spring.datasource.hikari.connection-timeout=500"))
			.hasMessageContaining("idempotency")
			.hasStackTraceContaining("Connection to 127.0.0.1:" + closedPort + " refused");
	}

	private static void sendBytes(String topic, String value, byte[] key) {
		ProducerRecord<String, String> record = new ProducerRecord<>(topic, 0, null, value);
		record.headers().add(KEY_HEADER, key);
		TestKafka.sendAsync(record);
		TestKafka.flush();
	}

	// each listener's group is named after its topic
	private static void awaitConsumed(String topic) {
		app.awaitCommitted(topic, topic);
	}

	private static List<String> received() {
		return app.bean(Keys.class).received();
	}

	private static List<Failure> recovered() {
		return app.bean(Recovered.class).failures();
	}

	private static int processed(String group, String key) {
		return TestEffects.processedKeys(app.jdbc(), group, key);
	}

	private static int freePort() {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
		catch (IOException ex) {
			throw new IllegalStateException(ex);
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ Keys.class, Amounts.class, Poison.class, Recovered.class })
	static class App {

		@Bean
		DefaultErrorHandler errorHandler(Recovered recovered) {
			return new DefaultErrorHandler(
					(record, ex) -> recovered.add(new Failure((ConsumerRecord<?, ?>) record, ex)),
					new FixedBackOff(0, 2));
		}

	}

	record Failure(ConsumerRecord<?, ?> record, Exception exception) {
	}

	static class Recovered {

		private final List<Failure> failures = new CopyOnWriteArrayList<>();

		void add(Failure failure) {
			this.failures.add(failure);
		}

		List<Failure> failures() {
			return this.failures;
		}

	}

	static class Keys {

		private final List<String> received = new CopyOnWriteArrayList<>();

		@KafkaListener(id = "bad-keys", topics = KEYS, groupId = KEYS)
		@Idempotent
		public void on(String payload) {
			this.received.add(payload);
		}

		List<String> received() {
			return this.received;
		}

	}

	static class Amounts {

		private final List<Long> received = new CopyOnWriteArrayList<>();

		@KafkaListener(id = "bad-payloads", topics = PAYLOADS, groupId = PAYLOADS)
		@Idempotent
		public void on(Long amount) {
			this.received.add(amount);
		}

		List<Long> received() {
			return this.received;
		}

	}

	static class Poison {

		private final List<String> applied = new CopyOnWriteArrayList<>();

		private int attempts;

		@KafkaListener(id = "poison", topics = POISON, groupId = POISON)
		@Idempotent
		public void on(String payload) {
			if (payload.equals("poison")) {
				synchronized (this) {
					this.attempts++;
				}
				throw new IllegalStateException("poison pill");
			}
			this.applied.add(payload);
		}

		synchronized int attempts() {
			return this.attempts;
		}

		List<String> applied() {
			return this.applied;
		}

	}

}
