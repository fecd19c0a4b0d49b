package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.OutboxTraceContext;
import java.util.Map;

import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;

/**
 * {@link OutboxTraceContext} of Micrometer Tracing: the propagator writes the tracer's
 * current context in its format (W3C {@code traceparent} with the OpenTelemetry bridge
 * or Brave's W3C propagation).
 */
public final class TracerOutboxTraceContext implements OutboxTraceContext {

	private final Tracer tracer;

	private final Propagator propagator;

	/**
	 * Create a trace context writer.
	 * @param tracer gives the current span's context
	 * @param propagator writes it as headers
	 */
	public TracerOutboxTraceContext(Tracer tracer, Propagator propagator) {
		this.tracer = tracer;
		this.propagator = propagator;
	}

	@Override
	public void inject(Map<String, String> headers) {
		TraceContext context = this.tracer.currentTraceContext().context();
		if (context != null) {
			this.propagator.inject(context, headers, Map::put);
		}
	}

}
