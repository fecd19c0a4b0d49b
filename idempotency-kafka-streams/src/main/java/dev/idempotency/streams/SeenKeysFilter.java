package dev.idempotency.streams;

import org.jspecify.annotations.Nullable;

/**
 * An in-memory Bloom filter of the keys a task has stored: "no" is certain, "maybe" needs
 * a store lookup. It is blocked: all the bits of a key lie in one block of 512 bits (one
 * 64-byte cache line), so an answer costs one hash of the key and one cache miss at
 * most, where a classic Bloom filter touches a line per bit (Guava's, measured here first,
 * cost the stream thread about as much as the store lookup it saved). A blocked filter
 * needs more bits than a classic one for the same false-positive rate, because the keys
 * fall unevenly on the blocks: it is sized by its own rate, the rate of a block holding
 * j keys weighted by the Poisson chance that a block holds j keys, so that a full filter
 * answers "maybe" for an absent key at most at the rate it was sized for.
 * <p>
 * A full filter grows without the keys it holds ({@link #grown()}): a new layer, for twice
 * as many keys again at half the rate, in front of the full one, so that the layers
 * together stay under twice the rate the first was sized for, and no scan of the store
 * is needed to grow; a purge that rebuilds the filter from the store makes one layer of
 * them again.
 * <p>
 * Not thread-safe: one filter belongs to one task.
 */
final class SeenKeysFilter {

	private static final int BLOCK_BITS = 512;

	private static final int WORDS_PER_BLOCK = BLOCK_BITS / Long.SIZE;

	// A key's bits in its block: 9 bits of hash each, 7 from every 64-bit hash (the key's
	// own, then mixes of it), so that the bits of a key are independent. An arithmetic walk
	// (position += step) left a few patterns of bits per block, keys that share many bits,
	// and a filter at up to twice the rate it was sized for.
	private static final int BITS_PER_HASH = Long.SIZE / 9;

	private static final long MORE_BITS = 0xC2B2AE3D27D4EB4FL;

	private static final int MAX_BLOCKS = Integer.MAX_VALUE / WORDS_PER_BLOCK;

	private final long[] words;

	private final int blocks;

	private final int bitsSetPerKey;

	private final long expectedKeys;

	private final double falsePositiveRate;

	// the full filter this one grew from, which holds the keys put before this one
	private final @Nullable SeenKeysFilter older;

	// keys put that the filter certainly did not hold: at most the distinct keys put
	private long keys;

	SeenKeysFilter(long expectedKeys, double falsePositiveRate) {
		this(expectedKeys, falsePositiveRate, null);
	}

	private SeenKeysFilter(long expectedKeys, double falsePositiveRate, @Nullable SeenKeysFilter older) {
		this.expectedKeys = expectedKeys;
		this.falsePositiveRate = falsePositiveRate;
		this.older = older;
		// k of a classic Bloom filter: m/n = -ln(p) / ln(2)^2, k = m/n * ln(2)
		double bitsPerKeyOptimal = -Math.log(falsePositiveRate) / (Math.log(2) * Math.log(2));
		this.bitsSetPerKey = (int) Math.max(1, Math.min(16, Math.round(bitsPerKeyOptimal * Math.log(2))));
		long keys = Math.max(1, expectedKeys);
		// start from the classic size, then grow until the blocked rate is met
		long blocks = Math.max(1, (long) Math.ceil(keys * bitsPerKeyOptimal / BLOCK_BITS));
		while (blocks < MAX_BLOCKS && falsePositiveRate(keys, blocks, this.bitsSetPerKey) > falsePositiveRate) {
			blocks = Math.min(MAX_BLOCKS, blocks + Math.max(1, blocks / 64));
		}
		this.blocks = (int) blocks;
		this.words = new long[this.blocks * WORDS_PER_BLOCK];
	}

	/**
	 * Return the false-positive rate of a full filter: a block holds j keys with the
	 * Poisson probability of mean keys / blocks, and a block that holds j keys, each
	 * setting k bits of its 512 drawn independently, answers "maybe" for an absent key
	 * with probability (1 - (1 - 1/512)^(kj))^k.
	 */
	static double falsePositiveRate(long keys, long blocks, int bitsSetPerKey) {
		double mean = (double) keys / blocks;
		double unset = Math.pow(1 - 1.0 / BLOCK_BITS, bitsSetPerKey);
		int last = (int) Math.ceil(mean + 12 * Math.sqrt(mean) + 12);
		double rate = 0;
		double probability = Math.exp(-mean); // P(j = 0)
		for (int j = 0; j <= last; j++) {
			if (j > 0) {
				probability *= mean / j;
			}
			rate += probability * Math.pow(1 - Math.pow(unset, j), bitsSetPerKey);
		}
		return rate;
	}

	/**
	 * Return the false-positive rate of this filter once it holds the given number of keys.
	 */
	double falsePositiveRate(long keys) {
		return falsePositiveRate(keys, this.blocks, this.bitsSetPerKey);
	}

	boolean mightContain(String key) {
		return mightContain(hash(key));
	}

	private boolean mightContain(long hash) {
		int block = block(hash);
		long bits = hash;
		for (int i = 0; i < this.bitsSetPerKey; i++) {
			if (i > 0 && i % BITS_PER_HASH == 0) {
				bits = mix(hash + MORE_BITS * i);
			}
			int bit = (int) bits & (BLOCK_BITS - 1);
			if ((this.words[block + (bit >>> 6)] & (1L << bit)) == 0) {
				return this.older != null && this.older.mightContain(hash);
			}
			bits >>>= 9;
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
		// a key an older layer might hold stays a "maybe" there: this layer need not hold it
		if (this.older != null && this.older.mightContain(hash)) {
			return true;
		}
		int block = block(hash);
		long bits = hash;
		boolean held = true;
		for (int i = 0; i < this.bitsSetPerKey; i++) {
			if (i > 0 && i % BITS_PER_HASH == 0) {
				bits = mix(hash + MORE_BITS * i);
			}
			int bit = (int) bits & (BLOCK_BITS - 1);
			int word = block + (bit >>> 6);
			long mask = 1L << bit;
			held &= (this.words[word] & mask) != 0;
			this.words[word] |= mask;
			bits >>>= 9;
		}
		if (!held) {
			this.keys++;
		}
		return held;
	}

	/**
	 * Return a filter that holds this one's keys and has room for twice as many again: a
	 * new layer in front of this one, at half its false-positive rate.
	 */
	SeenKeysFilter grown() {
		return new SeenKeysFilter(Math.max(1, 2 * keys()), this.falsePositiveRate / 2, this);
	}

	/**
	 * Return how many layers the filter has: one, and one more each time it grew.
	 */
	int layers() {
		return (this.older != null) ? 1 + this.older.layers() : 1;
	}

	/**
	 * Return how many of the keys put the filter certainly did not hold: the distinct keys
	 * put, less the few the filter took for held ones.
	 */
	long keys() {
		return (this.older != null) ? this.keys + this.older.keys() : this.keys;
	}

	/**
	 * Return whether the filter (its newest layer) holds more keys than it was sized for,
	 * beyond which its false-positive rate grows past the one it was sized for.
	 */
	boolean full() {
		return this.keys > this.expectedKeys;
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
