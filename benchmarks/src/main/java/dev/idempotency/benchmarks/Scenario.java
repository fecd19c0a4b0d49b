package dev.idempotency.benchmarks;

/**
 * The benchmark scenarios. The business work is the same in all of them: one row inserted
 * into a business table per message.
 */
enum Scenario {

	A("baseline record listener, @Transactional, no deduplication", Listener.RECORD_PLAIN, false, false),

	NOOP("ceiling: a record listener that does nothing (no transaction, no I/O)", Listener.RECORD_NOOP, false, false),

	B("@Idempotent record listener, all new", Listener.RECORD_IDEMPOTENT, false, false),

	B_CACHE("@Idempotent record listener, all new, Redis cache", Listener.RECORD_IDEMPOTENT, false, true),

	C_CACHE("@Idempotent record listener, all duplicates, Redis cache", Listener.RECORD_IDEMPOTENT, true, true),

	C_NO_CACHE("@Idempotent record listener, all duplicates, no cache", Listener.RECORD_IDEMPOTENT, true, false),

	L("@Idempotent(mode = LEASE) record listener, all new", Listener.RECORD_LEASE, false, false),

	D("baseline batch listener, one transaction per batch", Listener.BATCH_PLAIN, false, false),

	E("@Idempotent batch listener, all new", Listener.BATCH_IDEMPOTENT, false, false),

	E_FLOOR("floor of batch claims: the baseline batch listener plus one multi-row insert of the batch's keys into a "
			+ "table with a unique index, in the same transaction", Listener.BATCH_FLOOR, false, false),

	F("@Idempotent batch listener, all duplicates, Redis cache", Listener.BATCH_IDEMPOTENT, true, true),

	F_NO_CACHE("@Idempotent batch listener, all duplicates, no cache", Listener.BATCH_IDEMPOTENT, true, false),

	G("baseline record listener, @Transactional, 3 partitions, random UUID keys", Listener.RECORD_PLAIN, false, false,
			true),

	G_NEW("@Idempotent record listener, all new, no cache, processed_messages analyzed with another group then truncated, "
			+ "3 partitions, random UUID keys", Listener.RECORD_IDEMPOTENT, false, false, true),

	G_DUP("@Idempotent record listener, all duplicates, no cache, processed_messages truncated as for G_NEW, then "
			+ "filled with the keys, 3 partitions, random UUID keys", Listener.RECORD_IDEMPOTENT, true,
			false, true);

	final String description;

	final Listener listener;

	final boolean duplicates;

	final boolean cache;

	// a new consumer group on a table emptied just before: the keys are random, the topic
	// has three partitions, and the table grows through the run without fresh statistics
	final boolean growingTable;

	Scenario(String description, Listener listener, boolean duplicates, boolean cache) {
		this(description, listener, duplicates, cache, false);
	}

	Scenario(String description, Listener listener, boolean duplicates, boolean cache, boolean growingTable) {
		this.description = description;
		this.listener = listener;
		this.duplicates = duplicates;
		this.cache = cache;
		this.growingTable = growingTable;
	}

	/** Whether the listener writes a business row per new message. */
	boolean writes() {
		return !this.duplicates && this.listener != Listener.RECORD_NOOP;
	}

	boolean batch() {
		return this.listener == Listener.BATCH_PLAIN || this.listener == Listener.BATCH_FLOOR
				|| this.listener == Listener.BATCH_IDEMPOTENT;
	}

	enum Listener {

		RECORD_PLAIN, RECORD_NOOP, RECORD_IDEMPOTENT, RECORD_LEASE, BATCH_PLAIN, BATCH_FLOOR, BATCH_IDEMPOTENT

	}

}
