package dev.idempotency.streams;

/**
 * What the deduplicating processor does with a late record: one whose timestamp is more
 * than the grace period behind the stream time, so that the key it carries may already
 * have been purged from the store and the store can no longer tell whether it is a
 * duplicate. A late record whose key is still in the store within the window is dropped
 * as a duplicate whatever the policy.
 */
public enum LateRecordPolicy {

	/**
	 * Forward the record (it may be a duplicate the store no longer remembers) and count
	 * it as {@code outcome=forwarded, reason=late}.
	 */
	FORWARD,

	/**
	 * Drop the record (it may be a first occurrence) and count it as
	 * {@code outcome=dropped, reason=late}.
	 */
	DROP

}
