package dev.idempotency.internal.key;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.UUID;

import org.jspecify.annotations.Nullable;

/**
 * The idempotency key being handled on the current thread, by an {@code @Idempotent}
 * record listener or HTTP handler, so that the events it publishes through the outbox get
 * ids derived from it. The n-th event of a handling gets the same id each time the
 * handling runs again (after a rollback, a lost lease, a retried request), so the
 * consumers of those events claim the same keys and apply them once.
 * <p>
 * The id is a name-based UUID (version 8, RFC 9562) of the SHA-256 digest of the scope,
 * the key, the event's topic and its position among the handling's events.
 */
public final class CurrentHandling {

	private static final ThreadLocal<Handling> CURRENT = new ThreadLocal<>();

	private CurrentHandling() {
	}

	/**
	 * Bind a handling to the current thread.
	 * @param scope the scope of the key, as stored
	 * @param key the key, as stored
	 * @return the previous binding, to {@linkplain #restore(Object) restore} afterwards
	 */
	public static @Nullable Object bind(String scope, String key) {
		Handling previous = CURRENT.get();
		CURRENT.set(new Handling(scope, key));
		return previous;
	}

	/**
	 * Restore what {@link #bind(String, String)} returned.
	 * @param previous the previous binding, or {@code null}
	 */
	public static void restore(@Nullable Object previous) {
		if (previous instanceof Handling handling) {
			CURRENT.set(handling);
		}
		else {
			CURRENT.remove();
		}
	}

	/**
	 * Return the id of the next event the current handling publishes.
	 * @param topic the event's topic
	 * @return the derived id, or {@code null} when no handling is bound
	 */
	public static @Nullable UUID nextEventId(String topic) {
		Handling handling = CURRENT.get();
		return (handling != null) ? eventId(handling.scope, handling.key, topic, handling.published++) : null;
	}

	/**
	 * Return what gives the positions taken from now on back to the current handling, for
	 * a transaction that rolls back the events it published: the next attempt publishes
	 * them at the same positions, with the same ids.
	 * @return the rewind, or {@code null} when no handling is bound
	 */
	public static @Nullable Runnable rewind() {
		Handling handling = CURRENT.get();
		if (handling == null) {
			return null;
		}
		long position = handling.published;
		return () -> handling.published = Math.min(handling.published, position);
	}

	/**
	 * Return the id of the event published at a position of a handling.
	 * @param scope the scope of the handled key
	 * @param key the handled key
	 * @param topic the event's topic
	 * @param position the event's position among the handling's events, from 0
	 * @return the id
	 */
	public static UUID eventId(String scope, String key, String topic, long position) {
		MessageDigest digest;
		try {
			digest = MessageDigest.getInstance("SHA-256");
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException("SHA-256 is not available", ex);
		}
		for (String part : new String[] { "outbox-event", scope, key, topic, Long.toString(position) }) {
			digest.update(part.getBytes(StandardCharsets.UTF_8));
			// a separator no UTF-8 text contains, so that parts cannot run into each other
			digest.update((byte) 0xFF);
		}
		byte[] hash = digest.digest();
		hash[6] = (byte) ((hash[6] & 0x0F) | 0x80);
		hash[8] = (byte) ((hash[8] & 0x3F) | 0x80);
		ByteBuffer bytes = ByteBuffer.wrap(hash, 0, 16);
		return new UUID(bytes.getLong(), bytes.getLong());
	}

	private static final class Handling {

		private final String scope;

		private final String key;

		private long published;

		Handling(String scope, String key) {
			this.scope = scope;
			this.key = key;
		}

	}

}
