package dev.idempotency.benchmarks;

import java.util.List;

import dev.idempotency.Idempotent;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.transaction.annotation.Transactional;

/**
 * The listeners under test, one per scenario kind. Each inserts one business row per
 * message; only the deduplication around them differs.
 */
final class BenchmarkListeners {

	static final String INSERT = "INSERT INTO bench_effects (message_key, payload) VALUES (?, ?)";

	private BenchmarkListeners() {
	}

	static class RecordPlain {

		private final JdbcTemplate jdbc;

		RecordPlain(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "bench", topics = "${bench.topic}", groupId = "${bench.group}", autoStartup = "false")
		@Transactional
		public void on(String payload, @Header("X-Idempotency-Key") String key) {
			this.jdbc.update(INSERT, key, payload);
		}

	}

	// the ceiling of any deduplication: the consumer's own speed
	static class RecordNoop {

		@KafkaListener(id = "bench", topics = "${bench.topic}", groupId = "${bench.group}", autoStartup = "false")
		public void on(String payload, @Header("X-Idempotency-Key") String key) {
		}

	}

	static class RecordIdempotent {

		private final JdbcTemplate jdbc;

		RecordIdempotent(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "bench", topics = "${bench.topic}", groupId = "${bench.group}", autoStartup = "false")
		@Idempotent
		public void on(String payload, @Header("X-Idempotency-Key") String key) {
			this.jdbc.update(INSERT, key, payload);
		}

	}

	// the claim, the insert (in auto-commit) and the completion each commit on their own
	static class RecordLease {

		private final JdbcTemplate jdbc;

		RecordLease(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "bench", topics = "${bench.topic}", groupId = "${bench.group}", autoStartup = "false")
		@Idempotent(mode = Idempotent.Mode.LEASE)
		public void on(String payload, @Header("X-Idempotency-Key") String key) {
			this.jdbc.update(INSERT, key, payload);
		}

	}

	static class BatchPlain {

		private final JdbcTemplate jdbc;

		BatchPlain(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "bench", topics = "${bench.topic}", groupId = "${bench.group}", autoStartup = "false",
				batch = "true")
		@Transactional
		public void on(List<ConsumerRecord<String, String>> records) {
			this.jdbc.batchUpdate(INSERT, records.stream().map(BenchmarkListeners::row).toList());
		}

	}

	static class BatchIdempotent {

		private final JdbcTemplate jdbc;

		BatchIdempotent(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "bench", topics = "${bench.topic}", groupId = "${bench.group}", autoStartup = "false",
				batch = "true")
		@Idempotent
		public void on(List<ConsumerRecord<String, String>> records) {
			this.jdbc.batchUpdate(INSERT, records.stream().map(BenchmarkListeners::row).toList());
		}

	}

	private static Object[] row(ConsumerRecord<String, String> record) {
		return new Object[] { new String(record.headers().lastHeader("X-Idempotency-Key").value()), record.value() };
	}

}
