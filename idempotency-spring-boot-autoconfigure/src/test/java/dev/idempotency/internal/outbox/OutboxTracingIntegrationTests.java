package dev.idempotency.internal.outbox;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxEvent;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestConsumer;
import dev.idempotency.test.TestInfrastructure;
import io.micrometer.observation.ObservationHandler.FirstMatchingCompositeObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelBaggageManager;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.micrometer.tracing.propagation.Propagator;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The trace context stored with an outbox event and continued by the consumer, with
 * Micrometer Tracing on OpenTelemetry, a real broker and a real PostgreSQL.
 */
class OutboxTracingIntegrationTests {

	private static final String TOPIC = "it-outbox-traced";

	@RegisterExtension
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC)
		.properties(TestApplications.WITHOUT_JPA, TestApplications.WITH_RELAY, "idempotency.outbox.poll-interval=200ms",
				"spring.kafka.listener.observation-enabled=true", "spring.kafka.consumer.auto-offset-reset=earliest");

	@Test
	void theRecordCarriesThePublishersTraceAndTheConsumersDecisionContinuesIt() {
		Tracer tracer = app.bean(Tracer.class);
		Outbox outbox = app.bean(Outbox.class);
		Span publishing = tracer.nextSpan().name("place order").start();
		try (Tracer.SpanInScope scope = tracer.withSpan(publishing)) {
			app.bean(TransactionTemplate.class)
				.executeWithoutResult((status) -> outbox.publish(TOPIC, "order-1", "placed"));
		}
		finally {
			publishing.end();
		}
		String traceId = publishing.context().traceId();
		try (TestConsumer consumer = new TestConsumer(TOPIC)) {
			assertThat(consumer.receive(1, Duration.ofSeconds(20))).singleElement()
				.satisfies((record) -> assertThat(TestConsumer.header(record, "traceparent"))
					.startsWith("00-" + traceId + "-" + publishing.context().spanId() + "-"));
		}
		// the @Idempotent listener's decision is a span of the publisher's trace
		Spans spans = app.bean(Spans.class);
		await().atMost(Duration.ofSeconds(30))
			.untilAsserted(() -> assertThat(spans.finished())
				.anySatisfy((span) -> {
					assertThat(span.getTraceId()).isEqualTo(traceId);
					assertThat(span.getAttributes().asMap()).anySatisfy((key, value) -> {
						assertThat(key.getKey()).isEqualTo("outcome");
						assertThat(value).isEqualTo("processed");
					});
					// under spring-kafka's span of the record, itself a child of the publisher's
					assertThat(span.getParentSpanId()).isNotEqualTo(publishing.context().spanId());
				}));
	}

	@Test
	void aHeaderTheEventSetsItselfIsKept() {
		String topic = TOPIC + "-own";
		TestInfrastructure.createTopic(topic, 1);
		Tracer tracer = app.bean(Tracer.class);
		Outbox outbox = app.bean(Outbox.class);
		String own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
		Span publishing = tracer.nextSpan().name("place order").start();
		try (Tracer.SpanInScope scope = tracer.withSpan(publishing)) {
			app.bean(TransactionTemplate.class)
				.executeWithoutResult((status) -> outbox
					.publish(OutboxEvent.builder(topic, "order-2", "placed").header("traceparent", own).build()));
		}
		finally {
			publishing.end();
		}
		try (TestConsumer consumer = new TestConsumer(topic)) {
			assertThat(consumer.receive(1, Duration.ofSeconds(20))).singleElement()
				.satisfies((record) -> assertThat(TestConsumer.header(record, "traceparent")).isEqualTo(own));
		}
	}

	@Test
	void storesNoTraceContextOutsideASpan() {
		String topic = TOPIC + "-untraced";
		TestInfrastructure.createTopic(topic, 1);
		OutboxFixtures.publish(app.context(), topic, "order-3", "placed");
		try (TestConsumer consumer = new TestConsumer(topic)) {
			List<ConsumerRecord<String, String>> records = consumer.receive(1, Duration.ofSeconds(20));
			assertThat(records).singleElement()
				.satisfies((record) -> assertThat(TestConsumer.header(record, "traceparent")).isNull());
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		Spans spans() {
			return new Spans();
		}

		@Bean
		SdkTracerProvider tracerProvider(Spans spans) {
			return SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build();
		}

		@Bean
		OtelCurrentTraceContext currentTraceContext() {
			return new OtelCurrentTraceContext();
		}

		@Bean
		OtelTracer tracer(SdkTracerProvider provider, OtelCurrentTraceContext current) {
			return new OtelTracer(provider.get("test"), current, (event) -> {
			}, new OtelBaggageManager(current, List.of(), List.of()));
		}

		@Bean
		OtelPropagator propagator(SdkTracerProvider provider) {
			return new OtelPropagator(ContextPropagators.create(W3CTraceContextPropagator.getInstance()),
					provider.get("test"));
		}

		@Bean
		ObservationRegistry observationRegistry(Tracer tracer, Propagator propagator) {
			ObservationRegistry registry = ObservationRegistry.create();
			registry.observationConfig()
				.observationHandler(new FirstMatchingCompositeObservationHandler(
						new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
						new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
						new DefaultTracingObservationHandler(tracer)));
			return registry;
		}

		@Bean
		Orders orders() {
			return new Orders();
		}

	}

	static class Orders {

		@KafkaListener(id = "traced-orders", topics = TOPIC, groupId = "traced-orders")
		@Idempotent
		public void placed(String payload) {
		}

	}

	static class Spans implements SpanExporter {

		private final List<SpanData> finished = new CopyOnWriteArrayList<>();

		List<SpanData> finished() {
			return this.finished;
		}

		@Override
		public CompletableResultCode export(Collection<SpanData> spans) {
			this.finished.addAll(spans);
			return CompletableResultCode.ofSuccess();
		}

		@Override
		public CompletableResultCode flush() {
			return CompletableResultCode.ofSuccess();
		}

		@Override
		public CompletableResultCode shutdown() {
			return CompletableResultCode.ofSuccess();
		}

	}

}
