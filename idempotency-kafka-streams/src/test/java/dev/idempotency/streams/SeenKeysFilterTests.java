package dev.idempotency.streams;

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

	@ParameterizedTest(name = "{0} keys, {1}")
	@CsvSource({ "100000, 0.01", "100000, 0.001", "1000, 0.05" })
	void holdsEveryKeyPutAndFewOthers(int keys, double falsePositiveRate) {
		SeenKeysFilter filter = new SeenKeysFilter(keys, falsePositiveRate);
		String prefix = UUID.randomUUID().toString();
		long alreadyHeld = IntStream.range(0, keys).filter((i) -> filter.put(prefix + i)).count();
		assertThat(IntStream.range(0, keys).filter((i) -> !filter.mightContain(prefix + i)).count()).isZero();
		assertThat(IntStream.range(0, keys).allMatch((i) -> filter.put(prefix + i))).isTrue();
		// a put that says "held already" for a new key is a false positive too
		assertThat((double) alreadyHeld / keys).isLessThan(falsePositiveRate * 1.5);

		int absent = 200_000;
		long maybe = IntStream.range(0, absent).filter((i) -> filter.mightContain("absent-" + prefix + i)).count();
		// a blocked filter is a little worse than a classic one of the same size; it is
		// given more bits for it
		assertThat((double) maybe / absent).isLessThan(falsePositiveRate * 1.5);
	}

	@ParameterizedTest(name = "{0} keys put into a filter sized for {1}")
	@CsvSource({ "40000, 10000" })
	void aFilterFullerThanItsSizeStillHoldsEveryKey(int keys, int expected) {
		SeenKeysFilter filter = new SeenKeysFilter(expected, 0.01);
		IntStream.range(0, keys).forEach((i) -> filter.put("key-" + i));
		assertThat(IntStream.range(0, keys).allMatch((i) -> filter.mightContain("key-" + i))).isTrue();
	}

}
