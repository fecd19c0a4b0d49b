package dev.idempotency.streams;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import dev.idempotency.streams.test.TestBroker;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.EnableKafkaStreams;
import org.springframework.kafka.config.StreamsBuilderFactoryBean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A Spring Boot application with {@code @EnableKafkaStreams} that deduplicates a stream in
 * one line, on a real broker: the auto-configured RocksDB config setter is in force and
 * the decisions are counted in the application's registry.
 */
class SpringKafkaStreamsIntegrationTests {

	@TempDir
	Path stateDir;

	@Test
	void deduplicatesAStreamWithTheAutoConfiguredProcessorAndRocksDBSettings() {
		List<String> topics = TestBroker.createTopics("spring", 1, "in", "out");
		new ApplicationContextRunner()
			.withConfiguration(
					AutoConfigurations.of(KafkaAutoConfiguration.class, IdempotencyStreamsAutoConfiguration.class))
			.withUserConfiguration(PaymentsTopology.class)
			.withPropertyValues("spring.kafka.bootstrap-servers=" + TestBroker.bootstrapServers(),
					"spring.kafka.streams.application-id=spring-" + UUID.randomUUID(),
					"spring.kafka.streams.state-dir=" + this.stateDir,
					"spring.kafka.streams.properties.commit.interval.ms=100", "topics.in=" + topics.get(0),
					"topics.out=" + topics.get(1))
			.run((context) -> {
				StreamsBuilderFactoryBean factoryBean = context.getBean(StreamsBuilderFactoryBean.class);
				assertThat(factoryBean.getStreamsConfiguration().get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG))
					.isEqualTo(DeduplicationRocksDBConfigSetter.class);
				await().atMost(Duration.ofSeconds(60))
					.until(() -> factoryBean.getKafkaStreams() != null
							&& factoryBean.getKafkaStreams().state() == KafkaStreams.State.RUNNING);
				TestBroker.send(topics.get(0), "p1", "first");
				TestBroker.send(topics.get(0), "p1", "copy");
				TestBroker.send(topics.get(0), "p2", "second");
				assertThat(TestBroker.readCommitted(topics.get(1), 2, Duration.ofSeconds(30)))
					.containsExactly("first", "second");
				assertThat(DeduplicationRocksDBConfigSetter.sharedCacheUsers()).isPositive();
				MeterRegistry registry = context.getBean(MeterRegistry.class);
				assertThat(registry.get(DeduplicationMeters.RECORDS)
					.tags("processor", "payments", "outcome", "dropped", "reason", "duplicate")
					.counter()
					.count()).isEqualTo(1);
			});
	}

	@Configuration(proxyBeanMethods = false)
	@EnableKafkaStreams
	static class PaymentsTopology {

		@Bean
		MeterRegistry meterRegistry() {
			return new SimpleMeterRegistry();
		}

		@Bean
		KStream<String, String> payments(StreamsBuilder builder, StreamsDeduplication deduplication,
				@Value("${topics.in}") String in, @Value("${topics.out}") String out) {
			KStream<String, String> payments = builder.stream(in, Consumed.with(Serdes.String(), Serdes.String()));
			KStream<String, String> unique = payments.processValues(deduplication.processor("payments"));
			unique.to(out, Produced.with(Serdes.String(), Serdes.String()));
			return unique;
		}

	}

}
