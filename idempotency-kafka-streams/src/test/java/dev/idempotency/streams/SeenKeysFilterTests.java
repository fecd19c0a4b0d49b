package dev.idempotency.streams;

import java.util.Random;
import java.util.UUID;
import java.util.stream.IntStream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link SeenKeysFilter}: never says "no" for a key it holds, and says "maybe" for keys it
 * does not hold at about the rate it was sized for.
 */
class SeenKeysFilterTests {

	// The keys are drawn from a seeded generator, so that every run sees the same ones; the
	// bounds hold for any keys with a margin of at least 6 standard deviations of the
	// counts (binomial): 200,000 absent keys at p = 0.001 give 200 +- 14 "maybe" answers
	// when the filter meets its rate, against a bound of 300.
	@ParameterizedTest(name = "{0} keys, {1}, seed {2}")
	@CsvSource({ "100000, 0.01, 1", "100000, 0.001, 2", "1000, 0.05, 3", "100000, 0.001, 4" })
	void holdsEveryKeyPutAndFewOthers(int keys, double falsePositiveRate, long seed) {
		SeenKeysFilter filter = new SeenKeysFilter(keys, falsePositiveRate);
		String prefix = new UUID(new Random(seed).nextLong(), seed).toString();
		long alreadyHeld = IntStream.range(0, keys).filter((i) -> filter.put(prefix + i)).count();
		assertThat(IntStream.range(0, keys).filter((i) -> !filter.mightContain(prefix + i)).count()).isZero();
		assertThat(IntStream.range(0, keys).allMatch((i) -> filter.put(prefix + i))).isTrue();
		// a put that says "held already" for a new key is a false positive too; while the
		// filter fills, its rate is below that of the full filter
		assertThat(alreadyHeld).isLessThanOrEqualTo(bound(keys, falsePositiveRate));

		int absent = 200_000;
		long maybe = IntStream.range(0, absent).filter((i) -> filter.mightContain("absent-" + prefix + i)).count();
		assertThat(maybe).isLessThanOrEqualTo(bound(absent, falsePositiveRate));
	}

	@ParameterizedTest(name = "{0} keys, {1}")
	@CsvSource({ "100000, 0.01", "100000, 0.001", "1000, 0.05", "10000000, 0.001", "1, 0.01" })
	void isSizedForItsOwnRateNotAClassicFiltersRate(long keys, double falsePositiveRate) {
		SeenKeysFilter filter = new SeenKeysFilter(keys, falsePositiveRate);
		assertThat(filter.falsePositiveRate(keys)).isLessThanOrEqualTo(falsePositiveRate);
	}

	// the expected count at the sized rate plus 6 standard deviations of a binomial count
	private static long bound(int trials, double rate) {
		double mean = trials * rate;
		return (long) Math.ceil(mean + 6 * Math.sqrt(mean * (1 - rate)));
	}

	@ParameterizedTest(name = "{0} keys put into a filter sized for {1}")
	@CsvSource({ "40000, 10000" })
	void aFilterFullerThanItsSizeStillHoldsEveryKey(int keys, int expected) {
		SeenKeysFilter filter = new SeenKeysFilter(expected, 0.01);
		IntStream.range(0, keys).forEach((i) -> filter.put("key-" + i));
		assertThat(IntStream.range(0, keys).allMatch((i) -> filter.mightContain("key-" + i))).isTrue();
	}

	@org.junit.jupiter.api.Test
	void countsTheKeysItCertainlyDidNotHoldAndIsFullPastItsSize() {
		SeenKeysFilter filter = new SeenKeysFilter(1000, 0.01);
		IntStream.range(0, 1000).forEach((i) -> filter.put("key-" + i));
		IntStream.range(0, 1000).forEach((i) -> filter.put("key-" + i));
		// the keys a put took for held ones are false positives: about 1 % at most
		assertThat(filter.keys()).isBetween(980L, 1000L);
		assertThat(filter.full()).isFalse();
		IntStream.range(1000, 1100).forEach((i) -> filter.put("key-" + i));
		assertThat(filter.full()).isTrue();
	}

	/**
	 * A full filter grows a layer in front of it instead of being rebuilt from the store:
	 * the keys of the older layers stay held, the new layer takes the keys that follow,
	 * and the layers together say "maybe" for absent keys at under twice the rate the first
	 * was sized for (each new layer at half the rate of the one before).
	 */
	@ParameterizedTest(name = "{0} keys into a filter sized for {1}, seed {2}")
	@CsvSource({ "100000, 1000, 5", "300000, 10000, 6" })
	void growsLayersThatHoldEveryKeyPutAndFewOthers(int keys, int expected, long seed) {
		double falsePositiveRate = 0.01;
		SeenKeysFilter filter = new SeenKeysFilter(expected, falsePositiveRate);
		String prefix = new UUID(new Random(seed).nextLong(), seed).toString();
		for (int i = 0; i < keys; i++) {
			filter.put(prefix + i);
			if (filter.full()) {
				filter = filter.grown();
			}
		}
		SeenKeysFilter grown = filter;
		assertThat(grown.layers()).isGreaterThan(3);
		assertThat(IntStream.range(0, keys).allMatch((i) -> grown.mightContain(prefix + i))).isTrue();
		assertThat(IntStream.range(0, keys).allMatch((i) -> grown.put(prefix + i))).isTrue();
		assertThat(grown.keys()).isBetween((long) (keys * (1 - 2 * falsePositiveRate)), (long) keys);

		int absent = 200_000;
		long maybe = IntStream.range(0, absent).filter((i) -> grown.mightContain("absent-" + prefix + i)).count();
		assertThat(maybe).isLessThanOrEqualTo(bound(absent, 2 * falsePositiveRate));
	}

}
