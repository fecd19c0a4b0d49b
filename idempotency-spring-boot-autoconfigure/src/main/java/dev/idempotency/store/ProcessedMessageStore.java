package dev.idempotency.store;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * Records which messages have been processed. Declare a bean of this type to replace the
 * store the starter configures.
 * <p>
 * A {@linkplain #joinsTransaction() transactional} store claims inside the transaction in
 * which the listener method runs, so that the claim commits or rolls back together with
 * the method's work. Other stores claim before the transaction and are told afterwards,
 * through the returned {@link Claim}, whether the work succeeded.
 */
public interface ProcessedMessageStore {

	/**
	 * Claim the message's key in its scope.
	 * @param message the message to claim
	 * @return whether the key was new, and how to finish the claim
	 * @throws dev.idempotency.IdempotencyKeyInProgressException if another consumer holds
	 * the key right now and the store cannot wait for it
	 */
	Claim claim(ProcessedMessage message);

	/**
	 * Claim the keys of a batch of messages. A key that appears more than once in the
	 * batch is claimed once: only its first occurrence can be new. The default claims one
	 * message after the other; stores that can should claim the whole batch in one round
	 * trip.
	 * @param messages the messages to claim, in delivery order
	 * @return one claim per message, in the same order
	 */
	default List<Claim> claimAll(List<ProcessedMessage> messages) {
		List<Claim> claims = new ArrayList<>(messages.size());
		Set<String> seen = new HashSet<>();
		try {
			for (ProcessedMessage message : messages) {
				boolean first = seen.add(message.scope() + '\0' + message.key());
				claims.add(first ? claim(message) : Claim.DUPLICATE);
			}
		}
		catch (RuntimeException ex) {
			// give back what this batch already took, so that its retry can take it again
			Claim.releaseNew(claims, ex);
			throw ex;
		}
		return claims;
	}

	/**
	 * Give up keys claimed in the current transaction, so that it commits the listener's
	 * work without them: the listener handed their messages back with a batch
	 * {@code nack}, and they will be delivered again. Called on transactional stores only,
	 * inside the transaction of the claims.
	 * @param messages the messages whose keys to give up
	 * @return {@code true} if the keys were given up; {@code false} (the default) if the
	 * store cannot, and the whole batch must be rolled back and delivered again
	 */
	default boolean unclaimAll(List<ProcessedMessage> messages) {
		return false;
	}

	/**
	 * Return whether the key has been processed (committed) in the scope.
	 * @param scope the scope
	 * @param key the key, fitted to the store
	 * @return whether a processed record of the key exists
	 */
	boolean isProcessed(String scope, String key);

	/**
	 * Return whether claims join the listener's database transaction, so that its
	 * rollback undoes them.
	 * @return {@code true} for a transactional store
	 */
	default boolean joinsTransaction() {
		return true;
	}

	/**
	 * Return the claims with leases and fencing tokens of {@code @Idempotent(mode = LEASE)}
	 * listeners on this store's table, if the store supports them.
	 * @return the lease claims, or {@code null} (the default) when the store has none, in
	 * which case lease-mode listeners stop the application at start-up
	 */
	default @Nullable LeaseStore leases() {
		return null;
	}

	/**
	 * Return a short name of the store for meters and logs, such as {@code jdbc}.
	 * @return the store name
	 */
	default String name() {
		return getClass().getSimpleName();
	}

}
