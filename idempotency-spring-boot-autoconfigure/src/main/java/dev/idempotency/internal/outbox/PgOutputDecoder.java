package dev.idempotency.internal.outbox;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * Decodes the messages of PostgreSQL's built-in {@code pgoutput} plugin (protocol version
 * 1, text format) that the replication relay needs: the beginning and the commit of each
 * transaction, the relations (table descriptions, sent before a table's first change and
 * after it changed), and inserts. Other messages (origins, types, and updates, deletes or
 * truncates, which the outbox's publication does not publish) are skipped.
 */
final class PgOutputDecoder {

	// PostgreSQL's epoch, 2000-01-01T00:00:00Z, in microseconds since the Unix epoch
	private static final long POSTGRES_EPOCH_MICROS = 946_684_800_000_000L;

	private final Map<Integer, Relation> relations = new HashMap<>();

	/**
	 * Decode one message.
	 * @param message the message, positioned at its first byte
	 * @return what it says, or {@code null} for a message the relay does not need
	 */
	@Nullable Change decode(ByteBuffer message) {
		byte type = message.get();
		switch (type) {
			case 'B' -> {
				long finalLsn = message.getLong();
				long commitMicros = message.getLong();
				return new Begin(finalLsn, instant(commitMicros));
			}
			case 'C' -> {
				message.get(); // flags, unused
				long commitLsn = message.getLong();
				long endLsn = message.getLong();
				return new Commit(commitLsn, endLsn);
			}
			case 'R' -> {
				int id = message.getInt();
				String namespace = string(message);
				String name = string(message);
				message.get(); // replica identity
				int count = message.getShort();
				List<String> columns = new ArrayList<>(count);
				for (int i = 0; i < count; i++) {
					message.get(); // flags
					columns.add(string(message));
					message.getInt(); // type oid
					message.getInt(); // type modifier
				}
				Relation relation = new Relation(namespace, name, columns);
				this.relations.put(id, relation);
				return relation;
			}
			case 'I' -> {
				int id = message.getInt();
				Relation relation = this.relations.get(id);
				if (relation == null) {
					throw new IllegalStateException("Insert into relation " + id + " before its description");
				}
				message.get(); // 'N': a new tuple
				return new Insert(relation, tuple(message, relation));
			}
			default -> {
				return null;
			}
		}
	}

	private static Map<String, @Nullable String> tuple(ByteBuffer message, Relation relation) {
		int count = message.getShort();
		Map<String, @Nullable String> values = new HashMap<>();
		for (int i = 0; i < count; i++) {
			byte kind = message.get();
			String column = relation.columns().get(i);
			switch (kind) {
				case 't' -> {
					byte[] value = new byte[message.getInt()];
					message.get(value);
					values.put(column, new String(value, StandardCharsets.UTF_8));
				}
				case 'n' -> values.put(column, null);
				// unchanged TOASTed value: inserts carry every value, so never in an insert
				case 'u' -> throw new IllegalStateException("Unchanged TOASTed value of column " + column
						+ " in an insert");
				default -> throw new IllegalStateException("Unexpected value kind '" + (char) kind + "' of column "
						+ column + " (a binary-format value? the relay asks for text)");
			}
		}
		return values;
	}

	private static String string(ByteBuffer message) {
		int start = message.position();
		while (message.get() != 0) {
			// up to the terminating NUL
		}
		byte[] bytes = new byte[message.position() - start - 1];
		message.position(start);
		message.get(bytes);
		message.get(); // the NUL
		return new String(bytes, StandardCharsets.UTF_8);
	}

	private static Instant instant(long postgresMicros) {
		long micros = postgresMicros + POSTGRES_EPOCH_MICROS;
		return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
	}

	/**
	 * A decoded message.
	 */
	sealed interface Change permits Begin, Commit, Relation, Insert {

	}

	/**
	 * The beginning of a transaction.
	 *
	 * @param finalLsn the position of its commit record
	 * @param commitTime when it committed
	 */
	record Begin(long finalLsn, Instant commitTime) implements Change {
	}

	/**
	 * The commit of a transaction.
	 *
	 * @param commitLsn the position of its commit record
	 * @param endLsn the position just past it: confirming it confirms the transaction
	 */
	record Commit(long commitLsn, long endLsn) implements Change {
	}

	/**
	 * A table's description.
	 *
	 * @param namespace its schema
	 * @param name its name
	 * @param columns its column names, in the order of tuples
	 */
	record Relation(String namespace, String name, List<String> columns) implements Change {
	}

	/**
	 * A row inserted.
	 *
	 * @param relation its table
	 * @param values its values in text form, by column name ({@code null} for SQL null)
	 */
	record Insert(Relation relation, Map<String, @Nullable String> values) implements Change {
	}

}
