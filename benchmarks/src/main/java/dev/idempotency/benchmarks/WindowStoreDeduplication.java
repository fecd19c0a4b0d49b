package dev.idempotency.benchmarks;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorSupplier;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * The deduplication that Kafka Streams users usually write from the documentation and
 * its examples, the baseline of the streams benchmark: a persistent window store whose
 * retention is the window (Kafka Streams' defaults otherwise: changelogged, not cached,
 * segments of half the retention), and for each record a {@code fetch} of its id over
 * {@code [t - window, t + window]}; a record whose id was not found is put at its
 * timestamp and forwarded, the others are dropped. Expired ids go with their segment,
 * which the store drops as stream time passes it: no scan.
 */
final class WindowStoreDeduplication implements FixedKeyProcessorSupplier<String, String, String> {

	static final String STORE = "bench-window-dedup";

	private final Duration window;

	WindowStoreDeduplication(Duration window) {
		this.window = window;
	}

	@Override
	public FixedKeyProcessor<String, String, String> get() {
		return new Deduplicator(this.window.toMillis());
	}

	@Override
	public Set<StoreBuilder<?>> stores() {
		return Set.of(Stores.windowStoreBuilder(Stores.persistentWindowStore(STORE, this.window, this.window, false),
				Serdes.String(), Serdes.Long()));
	}

	private static final class Deduplicator implements FixedKeyProcessor<String, String, String> {

		private final long windowMs;

		private FixedKeyProcessorContext<String, String> context;

		private WindowStore<String, Long> seen;

		Deduplicator(long windowMs) {
			this.windowMs = windowMs;
		}

		@Override
		public void init(FixedKeyProcessorContext<String, String> context) {
			this.context = context;
			this.seen = context.getStateStore(STORE);
		}

		@Override
		public void process(FixedKeyRecord<String, String> record) {
			Header header = record.headers().lastHeader("X-Idempotency-Key");
			if (header == null) {
				this.context.forward(record);
				return;
			}
			String id = new String(header.value(), StandardCharsets.UTF_8);
			long timestamp = record.timestamp();
			try (WindowStoreIterator<Long> copies = this.seen.fetch(id, timestamp - this.windowMs,
					timestamp + this.windowMs)) {
				if (copies.hasNext()) {
					return;
				}
			}
			this.seen.put(id, timestamp, timestamp);
			this.context.forward(record);
		}

	}

}
