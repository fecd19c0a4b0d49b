package dev.idempotency;

/**
 * Told when an {@code @Idempotent(mode = LEASE)} listener method finished its work but
 * found, on recording completion, that its claim had been taken over: its lease expired
 * while it ran and another consumer claimed the key with a newer fencing token. The
 * record's effects may then have been applied twice; nothing was marked. Declare beans of
 * this type to compensate or alert; each is called on the listener's thread and its
 * failures are logged, never rethrown.
 */
@FunctionalInterface
public interface LeaseLostHandler {

	/**
	 * Handle a lost lease.
	 * @param lease what was lost
	 */
	void leaseLost(LostLease lease);

	/**
	 * A claim that was taken over before its method completed.
	 *
	 * @param listener the listener ({@code SimpleClassName.method})
	 * @param scope the scope of the key
	 * @param key the key, as stored
	 * @param fencingToken the fencing token the late consumer held
	 * @param topic the topic of the record
	 * @param partition the partition of the record
	 * @param offset the offset of the record
	 */
	record LostLease(String listener, String scope, String key, long fencingToken, String topic, int partition,
			long offset) {
	}

}
