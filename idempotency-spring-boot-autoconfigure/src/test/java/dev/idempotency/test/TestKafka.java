package dev.idempotency.test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.assertj.core.api.Assertions;
import org.awaitility.Awaitility;

/**
 * Sends records to, and reads consumer group offsets from, the test broker.
 */
public final class TestKafka {

	private static KafkaProducer<String, String> producer;

	private TestKafka() {
	}

	/**
	 * Send a record and wait for its acknowledgment.
	 * @param topic the topic
	 * @param partition the partition, or {@code null} to let the producer choose
	 * @param value the value
	 * @param headers headers to add, as UTF-8 text
	 */
	public static void send(String topic, Integer partition, String value, Map<String, String> headers) {
		ProducerRecord<String, String> record = new ProducerRecord<>(topic, partition, null, value);
		headers.forEach((name, text) -> record.headers().add(name, text.getBytes(StandardCharsets.UTF_8)));
		try {
			producer().send(record).get();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
		catch (ExecutionException ex) {
			throw new IllegalStateException("Could not send to " + topic, ex.getCause());
		}
	}

	/**
	 * Send a record without waiting for its acknowledgment.
	 * @param record the record
	 */
	public static void sendAsync(ProducerRecord<String, String> record) {
		producer().send(record);
	}

	/**
	 * Wait until all records sent so far are acknowledged.
	 */
	public static void flush() {
		producer().flush();
	}

	/**
	 * Return the offset committed by a group for a partition.
	 * @param group the consumer group
	 * @param partition the partition
	 * @return the committed offset, or -1 when none
	 */
	public static long committedOffset(String group, TopicPartition partition) {
		try (Admin admin = admin()) {
			Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
				.partitionsToOffsetAndMetadata()
				.get();
			OffsetAndMetadata offset = offsets.get(partition);
			return (offset != null) ? offset.offset() : -1;
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Return the end offset of a partition.
	 * @param partition the partition
	 * @return the offset the next record will get
	 */
	public static long endOffset(TopicPartition partition) {
		try (Admin admin = admin()) {
			return admin.listOffsets(Map.of(partition, OffsetSpec.latest())).partitionResult(partition).get().offset();
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Wait until a group has committed every record sent to a partition so far.
	 * @param group the consumer group
	 * @param partition the partition
	 * @param timeout how long to wait at most
	 */
	public static void awaitCommitted(String group, TopicPartition partition, Duration timeout) {
		long end = endOffset(partition);
		Awaitility.await()
			.atMost(timeout)
			.untilAsserted(() -> Assertions.assertThat(committedOffset(group, partition)).isEqualTo(end));
	}

	/**
	 * Move a group's committed offset back; the group must have no active member.
	 * @param group the consumer group
	 * @param partition the partition
	 * @param offset the new offset
	 */
	public static void resetOffset(String group, TopicPartition partition, long offset) {
		try (Admin admin = admin()) {
			admin.alterConsumerGroupOffsets(group, Map.of(partition, new OffsetAndMetadata(offset))).all().get();
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	private static Admin admin() {
		Properties properties = new Properties();
		properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, TestInfrastructure.kafkaBootstrapServers());
		return Admin.create(properties);
	}

	private static synchronized KafkaProducer<String, String> producer() {
		if (producer == null) {
			Properties properties = new Properties();
			properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, TestInfrastructure.kafkaBootstrapServers());
			properties.put(ProducerConfig.LINGER_MS_CONFIG, 5);
			producer = new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer());
		}
		return producer;
	}

}
