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

	// The least any claim of a batch does: the batch's keys inserted into a unique index,
	// in one statement, in the transaction of the batch's effects. No conflict handling,
	// no lock timeout, no columns beyond the key: what the starter's claim adds to this is
	// what E is measured against.
	static class BatchFloor {

		static final String TABLE = """
				CREATE TABLE IF NOT EXISTS bench_claims_floor (
				    consumer_group  VARCHAR(255) COLLATE "C" NOT NULL,
				    idempotency_key VARCHAR(255) COLLATE "C" NOT NULL,
				    PRIMARY KEY (consumer_group, idempotency_key))
				""";

		private static final String CLAIM = """
				INSERT INTO bench_claims_floor (consumer_group, idempotency_key) SELECT ?, unnest(?::varchar[])
				""";

		private final JdbcTemplate jdbc;

		private final String group;

		BatchFloor(JdbcTemplate jdbc, String group) {
			this.jdbc = jdbc;
			this.group = group;
		}

		@KafkaListener(id = "bench", topics = "${bench.topic}", groupId = "${bench.group}", autoStartup = "false",
				batch = "true")
		@Transactional
		public void on(List<ConsumerRecord<String, String>> records) {
			List<Object[]> rows = records.stream().map(BenchmarkListeners::row).toList();
			this.jdbc.update(CLAIM, this.group, rows.stream().map((row) -> (String) row[0]).toArray(String[]::new));
			this.jdbc.batchUpdate(INSERT, rows);
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
