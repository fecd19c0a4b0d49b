package dev.idempotency.internal.outbox;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

import org.jspecify.annotations.Nullable;
import org.postgresql.util.PGbytea;

/**
 * Decodes the messages of PostgreSQL's built-in {@code pgoutput} plugin (protocol version
 * 1) that the replication relay needs: the beginning and the commit of each transaction,
 * the relations (table descriptions, sent before a table's first change and after it
 * changed), and inserts. Other messages (origins, types, and updates, deletes or
 * truncates, which the outbox's publication does not publish) are skipped. Values come in
 * text form, or in binary form (PostgreSQL 14 and later, option {@code binary}): a bytea
 * then arrives as its bytes rather than as hex, half the size on the wire.
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
				int xid = message.getInt();
				return new Begin(finalLsn, instant(commitMicros), xid);
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
				List<Column> columns = new ArrayList<>(count);
				for (int i = 0; i < count; i++) {
					message.get(); // flags
					String column = string(message);
					int typeOid = message.getInt();
					message.getInt(); // type modifier
					columns.add(new Column(column, typeOid));
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

	private static Row tuple(ByteBuffer message, Relation relation) {
		int count = message.getShort();
		byte[] kinds = new byte[count];
		byte[][] values = new byte[count][];
		for (int i = 0; i < count; i++) {
			byte kind = message.get();
			kinds[i] = kind;
			switch (kind) {
				case 't', 'b' -> {
					byte[] value = new byte[message.getInt()];
					message.get(value);
					values[i] = value;
				}
				case 'n' -> values[i] = null;
				// unchanged TOASTed value: inserts carry every value, so never in an insert
				case 'u' -> throw new IllegalStateException("Unchanged TOASTed value of column "
						+ relation.columns().get(i).name() + " in an insert");
				default -> throw new IllegalStateException("Unexpected value kind '" + (char) kind + "' of column "
						+ relation.columns().get(i).name());
			}
		}
		return new Row(relation, kinds, values);
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
	 * @param xid its transaction id
	 */
	record Begin(long finalLsn, Instant commitTime, int xid) implements Change {
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
	 * @param columns its columns, in the order of tuples
	 * @param positions the position of each column, by name
	 */
	record Relation(String namespace, String name, List<Column> columns, Map<String, Integer> positions)
			implements Change {

		Relation(String namespace, String name, List<Column> columns) {
			this(namespace, name, columns, positions(columns));
		}

		private static Map<String, Integer> positions(List<Column> columns) {
			Map<String, Integer> positions = new HashMap<>();
			for (int i = 0; i < columns.size(); i++) {
				positions.put(columns.get(i).name(), i);
			}
			return positions;
		}

	}

	/**
	 * A column of a table.
	 *
	 * @param name its name
	 * @param type the oid of its type
	 */
	record Column(String name, int type) {
	}

	/**
	 * A row inserted.
	 *
	 * @param relation its table
	 * @param values its values
	 */
	record Insert(Relation relation, Row values) implements Change {
	}

	/**
	 * The values of a row, each read by the type its column has, in text or binary form.
	 */
	static final class Row {

		private static final int BYTEA = 17;

		private static final int INT8 = 20;

		private static final int INT2 = 21;

		private static final int INT4 = 23;

		private static final int NAME = 19;

		private static final int TEXT = 25;

		private static final int JSON = 114;

		private static final int BPCHAR = 1042;

		private static final int VARCHAR = 1043;

		private static final int JSONB = 3802;

		private static final int UUID_TYPE = 2950;

		private final Relation relation;

		private final byte[] kinds;

		private final byte[] @Nullable [] values;

		Row(Relation relation, byte[] kinds, byte[] @Nullable [] values) {
			this.relation = relation;
			this.kinds = kinds;
			this.values = values;
		}

		/**
		 * Return a value as text: the text form, or for a binary value of a text or JSON
		 * type, its characters.
		 * @param column the column
		 * @return the value, or {@code null} for SQL null or a column the table does not have
		 * @throws SQLException for a binary value of another type
		 */
		@Nullable String text(String column) throws SQLException {
			int i = present(column);
			if (i < 0) {
				return null;
			}
			byte[] value = Objects.requireNonNull(this.values[i]);
			if (this.kinds[i] != 'b') {
				return new String(value, StandardCharsets.UTF_8);
			}
			return switch (type(i)) {
				// the text types: their characters
				case TEXT, VARCHAR, BPCHAR, NAME, JSON -> new String(value, StandardCharsets.UTF_8);
				// jsonb's binary form: a version byte (1), then the text
				case JSONB -> {
					if (value.length == 0 || value[0] != 1) {
						throw new SQLException("Column " + column + " has a jsonb value of an unknown version");
					}
					yield new String(value, 1, value.length - 1, StandardCharsets.UTF_8);
				}
				// an integer or uuid column read as text (a key column of another type)
				case INT8, INT4, INT2 -> String.valueOf(integer(column));
				case UUID_TYPE -> String.valueOf(uuid(column));
				default -> throw new SQLException("Column " + column + " has a binary value of type " + type(i)
						+ ", which the relay does not read as text");
			};
		}

		/**
		 * Return an integer value (bigint, integer or smallint).
		 * @param column the column
		 * @return the value, or {@code null} for SQL null
		 * @throws SQLException for a value that is no integer
		 */
		@Nullable Long integer(String column) throws SQLException {
			int i = present(column);
			if (i < 0) {
				return null;
			}
			byte[] value = Objects.requireNonNull(this.values[i]);
			if (this.kinds[i] != 'b') {
				return Long.parseLong(new String(value, StandardCharsets.US_ASCII));
			}
			ByteBuffer buffer = ByteBuffer.wrap(value);
			return switch (type(i)) {
				case INT8 -> buffer.getLong();
				case INT4 -> (long) buffer.getInt();
				case INT2 -> (long) buffer.getShort();
				default -> throw new SQLException("Column " + column + " has type " + type(i) + ", not an integer");
			};
		}

		/**
		 * Return a uuid value.
		 * @param column the column
		 * @return the value, or {@code null} for SQL null
		 * @throws SQLException for a value that is no uuid
		 */
		@Nullable UUID uuid(String column) throws SQLException {
			int i = present(column);
			if (i < 0) {
				return null;
			}
			byte[] value = Objects.requireNonNull(this.values[i]);
			if (this.kinds[i] != 'b') {
				return UUID.fromString(new String(value, StandardCharsets.US_ASCII));
			}
			if (type(i) != UUID_TYPE) {
				throw new SQLException("Column " + column + " has type " + type(i) + ", not uuid");
			}
			ByteBuffer buffer = ByteBuffer.wrap(value);
			return new UUID(buffer.getLong(), buffer.getLong());
		}

		/**
		 * Return a bytea value, as its bytes.
		 * @param column the column
		 * @return the value, or {@code null} for SQL null
		 * @throws SQLException for a value that is no bytea
		 */
		byte @Nullable [] bytes(String column) throws SQLException {
			int i = present(column);
			if (i < 0) {
				return null;
			}
			byte[] value = Objects.requireNonNull(this.values[i]);
			if (this.kinds[i] != 'b') {
				return PGbytea.toBytes(value);
			}
			if (type(i) != BYTEA) {
				throw new SQLException("Column " + column + " has type " + type(i) + ", not bytea");
			}
			return value;
		}

		// the position of a column with a value, or -1 for SQL null or no such column
		private int present(String column) {
			Integer position = this.relation.positions().get(column);
			return (position != null && this.values[position] != null) ? position : -1;
		}

		private int type(int position) {
			return this.relation.columns().get(position).type();
		}

	}

}
