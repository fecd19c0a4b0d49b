package dev.idempotency;

import java.util.OptionalLong;

import org.jspecify.annotations.Nullable;

/**
 * What an {@code @Idempotent(mode = LEASE)} listener method may know of its claim while it
 * runs, on the thread that invokes it.
 * <p>
 * The fencing token is a number from a database sequence, drawn anew by every claim and
 * every takeover of an expired lease, so it only grows for a key: a consumer that stalled
 * past its lease holds a smaller token than the one that took its key over. A downstream
 * system that keeps the highest token it has seen per key (a conditional
 * {@code UPDATE ... WHERE fencing_token < ?}, an HTTP {@code If-Match} on a version) can
 * therefore reject the stale consumer's late write.
 */
public final class IdempotencyContext {

	private static final ThreadLocal<Lease> CURRENT = new ThreadLocal<>();

	private IdempotencyContext() {
	}

	/**
	 * Return the fencing token of the claim the current listener invocation holds.
	 * @return the fencing token
	 * @throws IllegalStateException if the current thread is not running an
	 * {@code @Idempotent(mode = LEASE)} method
	 */
	public static long fencingToken() {
		return current("fencing token").fencingToken();
	}

	/**
	 * Return the fencing token of the current claim, if the current thread is running an
	 * {@code @Idempotent(mode = LEASE)} method.
	 * @return the fencing token, or empty
	 */
	public static OptionalLong currentFencingToken() {
		Lease lease = CURRENT.get();
		return (lease != null) ? OptionalLong.of(lease.fencingToken()) : OptionalLong.empty();
	}

	/**
	 * Return the idempotency key (as stored) of the claim the current listener invocation
	 * holds.
	 * @return the key
	 * @throws IllegalStateException if the current thread is not running an
	 * {@code @Idempotent(mode = LEASE)} method
	 */
	public static String key() {
		return current("key").key();
	}

	private static Lease current(String what) {
		Lease lease = CURRENT.get();
		if (lease == null) {
			throw new IllegalStateException("No " + what + " on this thread: IdempotencyContext is available only "
					+ "while an @Idempotent(mode = LEASE) listener method runs, on its thread");
		}
		return lease;
	}

	/**
	 * Bind a claim to the current thread for the duration of an invocation. Called by the
	 * listener interceptor.
	 * @param key the stored key
	 * @param fencingToken the claim's fencing token
	 * @return the previously bound claim, to {@linkplain #restore(Object) restore} after
	 */
	public static @Nullable Object bind(String key, long fencingToken) {
		Lease previous = CURRENT.get();
		CURRENT.set(new Lease(key, fencingToken));
		return previous;
	}

	/**
	 * Restore what {@link #bind(String, long)} returned.
	 * @param previous the previously bound claim, or {@code null}
	 */
	public static void restore(@Nullable Object previous) {
		if (previous instanceof Lease lease) {
			CURRENT.set(lease);
		}
		else {
			CURRENT.remove();
		}
	}

	private record Lease(String key, long fencingToken) {
	}

}
