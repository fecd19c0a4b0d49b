package dev.idempotency.internal.consumer;

import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestEffects;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What the listener integration tests of this package share: the records their error
 * handler gave up, what a listener that stores its result returned and the replies sent
 * for it, records whose first delivery fails, and the replay of a listener's retry
 * topics. Listeners are proxied: a test reads what they saw from these beans, kept apart
 * from them.
 */
final class ListenerFixtures {

	private ListenerFixtures() {
	}

	/**
	 * The containers of a listener and of its retry topics that received records, the
	 * dead-letter topic's (empty) left out.
	 * @param app the application
	 * @param id the listener id, the prefix of its retry topics' container ids
	 * @return the containers
	 */
	static List<MessageListenerContainer> containersWithRecords(TestApplication app, String id) {
		return app.bean(KafkaListenerEndpointRegistry.class)
			.getListenerContainers()
			.stream()
			.filter((container) -> container.getListenerId().startsWith(id))
			.filter((container) -> TestKafka.endOffset(partition(container)) > 0)
			.toList();
	}

	/**
	 * Wait until each container's group has committed every record of its topic.
	 * @param app the application
	 * @param containers the containers, of one partition each
	 */
	static void awaitCommitted(TestApplication app, List<MessageListenerContainer> containers) {
		for (MessageListenerContainer container : containers) {
			app.awaitCommitted(container.getGroupId(), partition(container).topic());
		}
	}

	/**
	 * Read every topic of the containers again from the start, and wait until all is
	 * committed again.
	 * @param app the application
	 * @param containers the containers, of one partition each
	 */
	static void replay(TestApplication app, List<MessageListenerContainer> containers) {
		containers.forEach(MessageListenerContainer::stop);
		for (MessageListenerContainer container : containers) {
			TestKafka.resetOffset(container.getGroupId(), partition(container), 0);
		}
		containers.forEach(MessageListenerContainer::start);
		awaitCommitted(app, containers);
	}

	/**
	 * Send a keyed and a keyless record whose first delivery from their topic fails, wait
	 * until the listener has applied each once from its retry topic (the dead-letter topic
	 * staying empty), then replay every topic of the listener from the start and check that
	 * neither is applied again.
	 * @param app the application, with a {@link FailFirst} and {@link TestEffects}
	 * @param topic the listener's topic
	 * @param id the listener id, also the listener name of its effects
	 * @return the key of the keyed record
	 */
	static String applyFromRetryTopicAndReplay(TestApplication app, String topic, String id) {
		TestEffects effects = app.bean(TestEffects.class);
		FailFirst failFirst = app.bean(FailFirst.class);
		String run = UUID.randomUUID().toString();
		String keyed = run + "-keyed";
		String keyless = run + "-keyless";
		failFirst.failFirst(keyed);
		failFirst.failFirst(keyless);
		app.send(topic, keyed, keyed);
		app.send(topic, keyless, null);
		await().atMost(TestApplication.TIMEOUT).untilAsserted(() -> {
			assertThat(effects.count(id, keyed)).isEqualTo(1);
			assertThat(effects.count(id, keyless)).isEqualTo(1);
		});
		// the dead-letter topic stays empty
		List<MessageListenerContainer> containers = containersWithRecords(app, id);
		assertThat(containers).hasSize(2);
		awaitCommitted(app, containers);
		// replay every topic of the listener from the start
		replay(app, containers);
		assertThat(effects.count(id, keyed)).isEqualTo(1);
		assertThat(effects.count(id, keyless)).isEqualTo(1);
		return keyed;
	}

	private static TopicPartition partition(MessageListenerContainer container) {
		return new TopicPartition(container.getContainerProperties().getTopics()[0], 0);
	}

	/**
	 * The records an error handler gave up, as its recoverer was handed them.
	 */
	static class Recovered {

		final List<Failure> failures = new CopyOnWriteArrayList<>();

		/**
		 * An error handler that retries a failed record at once so many times, then hands
		 * it here.
		 * @param retries the retries after the first attempt
		 * @return the error handler
		 */
		DefaultErrorHandler errorHandler(long retries) {
			return new DefaultErrorHandler((record, ex) -> this.failures.add(new Failure(record, ex)),
					new FixedBackOff(0, retries));
		}

		/**
		 * The listeners' exceptions, which the container wrapped.
		 * @return the causes of the failures
		 */
		List<Throwable> exceptions() {
			return this.failures.stream().map((failure) -> failure.exception().getCause()).toList();
		}

		/**
		 * The listeners' exceptions for the records of one topic.
		 * @param topic the topic
		 * @return the causes of the failures
		 */
		List<Throwable> exceptions(String topic) {
			return this.failures.stream()
				.filter((failure) -> failure.record().topic().equals(topic))
				.map((failure) -> failure.exception().getCause())
				.toList();
		}

	}

	/**
	 * The error handler of the {@link Recovered} records: it retries a failed record at
	 * once as many times as {@code test.error-handler.retries} says (none by default), then
	 * hands it to the application's {@link Recovered}.
	 */
	@Configuration(proxyBeanMethods = false)
	static class RecoveringErrorHandler {

		@Bean
		Recovered recovered() {
			return new Recovered();
		}

		@Bean
		DefaultErrorHandler errorHandler(Recovered recovered,
				@Value("${test.error-handler.retries:0}") long retries) {
			return recovered.errorHandler(retries);
		}

	}

	/**
	 * A record given up, and the error handler's exception.
	 *
	 * @param record the record
	 * @param exception the exception
	 */
	record Failure(ConsumerRecord<?, ?> record, Exception exception) {
	}

	/**
	 * What a listener that stores its result returned, and the replies sent to its
	 * {@code @SendTo} topic, for its records and, from the stored result, for their
	 * duplicates.
	 */
	static class Replies {

		final List<String> receipts = new CopyOnWriteArrayList<>();

		final List<String> replies = new CopyOnWriteArrayList<>();

		/**
		 * Keep a receipt the listener returns.
		 * @param receipt the receipt
		 * @return the receipt
		 */
		String receipt(String receipt) {
			this.receipts.add(receipt);
			return receipt;
		}

		/**
		 * Keep a reply read from the reply topic.
		 * @param reply the reply
		 */
		void reply(ConsumerRecord<String, String> reply) {
			this.replies.add(reply.value());
		}

	}

	/**
	 * Records whose first delivery from their own topic fails, as a failure the retry
	 * topics then recover from.
	 */
	static class FailFirst {

		private final Set<String> values = ConcurrentHashMap.newKeySet();

		/**
		 * Fail the first delivery of a record.
		 * @param value the record's value
		 */
		void failFirst(String value) {
			this.values.add(value);
		}

		/**
		 * Throw if this is the first delivery of such a record from the given topic.
		 * @param record the record
		 * @param topic the record's own topic, not a retry topic
		 */
		void failIfFirst(ConsumerRecord<String, String> record, String topic) {
			if (record.topic().equals(topic) && this.values.remove(record.value())) {
				throw new IllegalStateException("The first delivery fails");
			}
		}

	}

}
