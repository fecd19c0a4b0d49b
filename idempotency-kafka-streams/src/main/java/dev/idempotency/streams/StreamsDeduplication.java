package dev.idempotency.streams;

import io.micrometer.core.instrument.MeterRegistry;

/**
 * Makes deduplicating processors with the application's {@code idempotency.streams.*}
 * settings and meter registry. Use it in one line on a {@code KStream}:
 *
 * <pre class="code">
 * KStream&lt;String, Payment&gt; unique = payments.processValues(deduplication.processor("payments"));
 * </pre>
 */
public final class StreamsDeduplication {

	private final IdempotencyStreamsProperties properties;

	private final MeterRegistry meterRegistry;

	/**
	 * Create a factory of deduplicating processors.
	 * @param properties the settings
	 * @param meterRegistry the registry of their meters
	 */
	public StreamsDeduplication(IdempotencyStreamsProperties properties, MeterRegistry meterRegistry) {
		this.properties = properties;
		this.meterRegistry = meterRegistry;
	}

	/**
	 * Return a deduplicating processor with the configured settings.
	 * @param name the name of the processor, its store and its meters; unique in the
	 * topology
	 * @param <K> the record key type
	 * @param <V> the record value type
	 * @return the processor supplier, for {@code KStream#processValues}
	 */
	public <K, V> Deduplication<K, V> processor(String name) {
		return this.<K, V>builder(name).build();
	}

	/**
	 * Return a builder with the configured settings, to change some of them for one
	 * processor (for example its key extractor).
	 * @param name the name of the processor, its store and its meters; unique in the
	 * topology
	 * @param <K> the record key type
	 * @param <V> the record value type
	 * @return the builder
	 */
	public <K, V> Deduplication.Builder<K, V> builder(String name) {
		Deduplication.Builder<K, V> builder = Deduplication.<K, V>builder(name)
			.keyExtractor(IdempotencyKeyExtractor.header(this.properties.keyHeader()))
			.window(this.properties.window())
			.grace(this.properties.grace())
			.purgeInterval(this.properties.purgeInterval())
			.latePolicy(this.properties.latePolicy())
			.missingKeyPolicy(this.properties.missingKey())
			.meterRegistry(this.meterRegistry);
		IdempotencyStreamsProperties.BloomPreCheck preCheck = this.properties.bloomPreCheck();
		if (preCheck.enabled()) {
			builder.bloomPreCheck(preCheck.expectedKeys(), preCheck.falsePositiveRate());
		}
		else {
			builder.withoutBloomPreCheck();
		}
		return builder;
	}

}
