package dev.idempotency.streams;

/**
 * An in-memory Bloom filter of the keys a task has stored: "no" is certain, "maybe" needs
 * a store lookup. It is blocked: all the bits of a key lie in one block of 512 bits (one
 * 64-byte cache line), so an answer costs one hash of the key and one cache miss at
 * most, where a classic Bloom filter touches a line per bit (Guava's, measured here first,
 * cost the stream thread about as much as the store lookup it saved). A blocked filter
 * needs a fifth to a third more bits for the same false-positive rate; they are added.
 * <p>
 * Not thread-safe: one filter belongs to one task.
 */
final class SeenKeysFilter {

	private static final int BLOCK_BITS = 512;

	private static final int WORDS_PER_BLOCK = BLOCK_BITS / Long.SIZE;

	// the extra bits a blocked filter needs for the false-positive rate of a classic one,
	// per bit set by a key: the more bits a key sets in its block, the more the uneven
	// load of the blocks costs (measured: 1 % and 0.1 % met with about 20 % and 30 % more)
	private static final double BLOCKED_OVERHEAD_PER_BIT = 0.03;

	private static final int MAX_BLOCKS = Integer.MAX_VALUE / WORDS_PER_BLOCK;

	private final long[] words;

	private final int blocks;

	private final int bitsSetPerKey;

	SeenKeysFilter(long expectedKeys, double falsePositiveRate) {
		// the optimal sizes of a classic Bloom filter: m/n = -ln(p) / ln(2)^2, k = m/n * ln(2)
		double bitsPerKeyOptimal = -Math.log(falsePositiveRate) / (Math.log(2) * Math.log(2));
		this.bitsSetPerKey = (int) Math.max(1, Math.min(16, Math.round(bitsPerKeyOptimal * Math.log(2))));
		double bits = Math.max(1, expectedKeys) * bitsPerKeyOptimal
				* (1 + BLOCKED_OVERHEAD_PER_BIT * this.bitsSetPerKey);
		this.blocks = (int) Math.max(1, Math.min(MAX_BLOCKS, Math.ceil(bits / BLOCK_BITS)));
		this.words = new long[this.blocks * WORDS_PER_BLOCK];
	}

	boolean mightContain(String key) {
		long hash = hash(key);
		int block = block(hash);
		int position = (int) hash;
		int step = (int) (hash >>> 32) | 1;
		for (int i = 0; i < this.bitsSetPerKey; i++) {
			int bit = position & (BLOCK_BITS - 1);
			if ((this.words[block + (bit >>> 6)] & (1L << bit)) == 0) {
				return false;
			}
			position += step;
		}
		return true;
	}

	/**
	 * Add the key.
	 * @return whether the filter might have held it already ({@code false}: it certainly
	 * did not)
	 */
	boolean put(String key) {
		long hash = hash(key);
		int block = block(hash);
		int position = (int) hash;
		int step = (int) (hash >>> 32) | 1;
		boolean held = true;
		for (int i = 0; i < this.bitsSetPerKey; i++) {
			int bit = position & (BLOCK_BITS - 1);
			int word = block + (bit >>> 6);
			long mask = 1L << bit;
			held &= (this.words[word] & mask) != 0;
			this.words[word] |= mask;
			position += step;
		}
		return held;
	}

	/**
	 * Return the index of the first word of the key's block. The block comes from bits of
	 * the hash that the bit positions within the block do not use (a second mix of it).
	 */
	private int block(long hash) {
		long mixed = mix(hash ^ 0x9E3779B97F4A7C15L);
		return (int) Math.floorMod(mixed, (long) this.blocks) * WORDS_PER_BLOCK;
	}

	/**
	 * FNV-1a over the key's UTF-16 code units, then a 64-bit finalizer so that every bit
	 * of the result depends on every unit. Collisions only make "maybe" answers (a store
	 * lookup), never a wrong decision.
	 */
	static long hash(String key) {
		long hash = 0xcbf29ce484222325L;
		for (int i = 0; i < key.length(); i++) {
			hash = (hash ^ key.charAt(i)) * 0x100000001b3L;
		}
		return mix(hash);
	}

	private static long mix(long value) {
		long mixed = value;
		mixed = (mixed ^ (mixed >>> 33)) * 0xff51afd7ed558ccdL;
		mixed = (mixed ^ (mixed >>> 33)) * 0xc4ceb9fe1a85ec53L;
		return mixed ^ (mixed >>> 33);
	}

}
