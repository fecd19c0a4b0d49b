package dev.idempotency.outbox;

import java.util.Map;

/**
 * Writes the trace context current at {@link Outbox#publish} into the headers stored
 * with the event, so that the relay sends it with the record and the consumer's span
 * continues the publisher's trace.
 */
@FunctionalInterface
public interface OutboxTraceContext {

	/**
	 * Writes nothing.
	 */
	OutboxTraceContext NONE = (headers) -> {
	};

	/**
	 * Put the current trace context, if any, into the given headers.
	 * @param headers the headers to add to
	 */
	void inject(Map<String, String> headers);

}
