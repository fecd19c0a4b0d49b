package dev.idempotency.internal.outbox;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import dev.idempotency.internal.outbox.PgOutputDecoder.Insert;
import dev.idempotency.internal.outbox.PgOutputDecoder.Row;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@link PgOutputDecoder} on what a real PostgreSQL's {@code pgoutput} writes for a row of
 * every type the outbox table has, in text form and in binary form: both read the same.
 */
class PgOutputDecoderIntegrationTests {

	private static final String TABLE = "decoder_rows";

	private static final String SLOT = "decoder_rows_slot";

	private final JdbcTemplate jdbc = ReplicationFixtures.jdbc();

	@BeforeEach
	void createTableAndSlot() {
		dropTableAndSlot();
		this.jdbc.execute("CREATE TABLE " + TABLE + " (id BIGINT PRIMARY KEY, event_id UUID, topic VARCHAR(249), "
				+ "payload BYTEA, headers JSONB, attempts INTEGER, small SMALLINT, last_error TEXT)");
		this.jdbc.execute("CREATE PUBLICATION " + TABLE + "_publication FOR TABLE " + TABLE
				+ " WITH (publish = 'insert')");
		this.jdbc.queryForList("SELECT pg_create_logical_replication_slot(?, 'pgoutput')", SLOT);
	}

	@AfterEach
	void dropTableAndSlot() {
		if (!this.jdbc.queryForList("SELECT 1 FROM pg_replication_slots WHERE slot_name = ?", SLOT).isEmpty()) {
			this.jdbc.queryForList("SELECT pg_drop_replication_slot(?)", SLOT);
		}
		this.jdbc.execute("DROP PUBLICATION IF EXISTS " + TABLE + "_publication");
		this.jdbc.execute("DROP TABLE IF EXISTS " + TABLE);
	}

	@Test
	void readsEveryColumnTheSameInTextAndBinaryForm() throws SQLException {
		UUID eventId = UUID.randomUUID();
		byte[] payload = new byte[1024];
		for (int i = 0; i < payload.length; i++) {
			payload[i] = (byte) i;
		}
		this.jdbc.update("INSERT INTO " + TABLE + " VALUES (?, ?, ?, ?, ?::jsonb, ?, ?, ?)", 9_000_000_000L, eventId,
				"Grüße-東京", payload, "{\"k\": \"v \\\"quoted\\\"\"}", 7, 3, null);

		for (boolean binary : List.of(false, true)) {
			Row row = insertedRow(binary);
			assertThat(row.integer("id")).isEqualTo(9_000_000_000L);
			assertThat(row.uuid("event_id")).isEqualTo(eventId);
			assertThat(row.text("topic")).isEqualTo("Grüße-東京");
			assertThat(row.bytes("payload")).isEqualTo(payload);
			assertThat(row.text("headers")).isEqualTo("{\"k\": \"v \\\"quoted\\\"\"}");
			assertThat(row.integer("attempts")).isEqualTo(7L);
			assertThat(row.integer("small")).isEqualTo(3L);
			assertThat(row.text("last_error")).isNull();
			assertThat(row.text("no_such_column")).isNull();
		}
	}

	@Test
	void aBinaryValueReadAsAnotherTypeIsAnErrorNotAWrongValue() throws SQLException {
		this.jdbc.update("INSERT INTO " + TABLE + " (id, event_id, topic, payload) VALUES (1, ?, 't', ?)",
				UUID.randomUUID(), "x".getBytes(StandardCharsets.UTF_8));
		Row row = insertedRow(true);
		assertThatExceptionOfType(SQLException.class).isThrownBy(() -> row.text("payload"));
		assertThatExceptionOfType(SQLException.class).isThrownBy(() -> row.uuid("topic"));
		assertThatExceptionOfType(SQLException.class).isThrownBy(() -> row.bytes("event_id"));
		assertThatExceptionOfType(SQLException.class).isThrownBy(() -> row.integer("payload"));
	}

	@Test
	void anIntegerOrUuidColumnReadAsTextGivesItsTextFormInEitherForm() throws SQLException {
		UUID eventId = UUID.randomUUID();
		this.jdbc.update("INSERT INTO " + TABLE + " (id, event_id, topic, payload) VALUES (-42, ?, 't', ?)", eventId,
				"x".getBytes(StandardCharsets.UTF_8));
		for (boolean binary : List.of(false, true)) {
			Row row = insertedRow(binary);
			assertThat(row.text("id")).isEqualTo("-42");
			assertThat(row.text("event_id")).isEqualTo(eventId.toString());
		}
	}

	// the row inserted, decoded from the messages of the slot, peeked (not consumed); the
	// server commits asynchronously and decodes only what is flushed, so it may take a moment
	private Row insertedRow(boolean binary) {
		List<Insert> inserts = new ArrayList<>();
		await().atMost(Duration.ofSeconds(10)).until(() -> {
			inserts.clear();
			inserts.addAll(inserts(binary));
			return !inserts.isEmpty();
		});
		assertThat(inserts).hasSize(1);
		return inserts.get(0).values();
	}

	private List<Insert> inserts(boolean binary) {
		List<byte[]> messages = this.jdbc.queryForList(
				"SELECT data FROM pg_logical_slot_peek_binary_changes(?, NULL, NULL, 'proto_version', '1', "
						+ "'publication_names', ?, 'binary', ?)",
				byte[].class, SLOT, TABLE + "_publication", String.valueOf(binary));
		PgOutputDecoder decoder = new PgOutputDecoder();
		List<Insert> inserts = new ArrayList<>();
		for (byte[] message : messages) {
			if (decoder.decode(ByteBuffer.wrap(message)) instanceof Insert insert) {
				inserts.add(insert);
			}
		}
		return inserts;
	}

}
