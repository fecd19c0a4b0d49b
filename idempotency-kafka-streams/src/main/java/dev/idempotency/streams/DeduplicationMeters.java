package dev.idempotency.streams;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * The {@code idempotency.streams.records} counters of one deduplicating processor,
 * registered when the processor is created so that every series exists from the start.
 */
final class DeduplicationMeters {

	/**
	 * Name of the counter of records seen by deduplicating processors. Tags:
	 * {@code processor}; {@code outcome} = forwarded, dropped, failed; {@code reason} =
	 * new, duplicate, late, missing-key, extractor-error.
	 */
	static final String RECORDS = "idempotency.streams.records";

	private final Counter forwarded;

	private final Counter duplicate;

	private final Counter lateForwarded;

	private final Counter lateDropped;

	private final Counter missingKeyForwarded;

	private final Counter missingKeyDropped;

	private final Counter missingKeyFailed;

	private final Counter extractorFailed;

	DeduplicationMeters(MeterRegistry registry, String processor) {
		this.forwarded = counter(registry, processor, "forwarded", "new");
		this.duplicate = counter(registry, processor, "dropped", "duplicate");
		this.lateForwarded = counter(registry, processor, "forwarded", "late");
		this.lateDropped = counter(registry, processor, "dropped", "late");
		this.missingKeyForwarded = counter(registry, processor, "forwarded", "missing-key");
		this.missingKeyDropped = counter(registry, processor, "dropped", "missing-key");
		this.missingKeyFailed = counter(registry, processor, "failed", "missing-key");
		this.extractorFailed = counter(registry, processor, "failed", "extractor-error");
	}

	private static Counter counter(MeterRegistry registry, String processor, String outcome, String reason) {
		return Counter.builder(RECORDS)
			.description("Records seen by a deduplicating Kafka Streams processor, by outcome and reason")
			.tag("processor", processor)
			.tag("outcome", outcome)
			.tag("reason", reason)
			.register(registry);
	}

	void forwarded() {
		this.forwarded.increment();
	}

	void duplicate() {
		this.duplicate.increment();
	}

	void lateForwarded() {
		this.lateForwarded.increment();
	}

	void lateDropped() {
		this.lateDropped.increment();
	}

	void missingKeyForwarded() {
		this.missingKeyForwarded.increment();
	}

	void missingKeyDropped() {
		this.missingKeyDropped.increment();
	}

	void missingKeyFailed() {
		this.missingKeyFailed.increment();
	}

	void extractorFailed() {
		this.extractorFailed.increment();
	}

}
