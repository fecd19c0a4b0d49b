package dev.idempotency.streams;

import java.nio.charset.StandardCharsets;

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;

/**
 * An in-memory Bloom filter of the keys a task has stored: "no" is certain, "maybe" needs
 * a store lookup. Guava's implementation, loaded only when the pre-check is on.
 */
final class SeenKeysFilter {

	private final BloomFilter<CharSequence> filter;

	SeenKeysFilter(long expectedKeys, double falsePositiveRate) {
		this.filter = BloomFilter.create(Funnels.stringFunnel(StandardCharsets.UTF_8), expectedKeys,
				falsePositiveRate);
	}

	static boolean available() {
		try {
			Class.forName("com.google.common.hash.BloomFilter", false, SeenKeysFilter.class.getClassLoader());
			return true;
		}
		catch (ClassNotFoundException ex) {
			return false;
		}
	}

	boolean mightContain(String key) {
		return this.filter.mightContain(key);
	}

	void put(String key) {
		this.filter.put(key);
	}

}
