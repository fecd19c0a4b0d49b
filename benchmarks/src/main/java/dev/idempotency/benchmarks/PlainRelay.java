package dev.idempotency.benchmarks;

import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import org.springframework.kafka.core.ProducerFactory;

/**
 * The least any relay on an outbox table does, as a floor to compare the relay with: read
 * a batch of 500 pending events in id order, send them with a plain {@code KafkaProducer}
 * (the relay's settings), wait for every acknowledgment, delete them, and again, on one
 * connection in auto-commit. No claim (one instance only), no per-key order when a send
 * fails, no retries, no meters.
 */
final class PlainRelay {

	private static final int BATCH = 500;

	private PlainRelay() {
	}

	static double eventsPerSecond(DataSource dataSource, ProducerFactory<?, ?> application, String table,
			String topic, int events) throws SQLException {
		Map<String, Object> configs = new HashMap<>(application.getConfigurationProperties());
		configs.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
		configs.put(ProducerConfig.ACKS_CONFIG, "all");
		configs.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
		configs.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 0);
		String select = "SELECT id, aggregate_id, payload, event_id FROM " + table
				+ " WHERE status = 'PENDING' AND topic = ? ORDER BY id LIMIT " + BATCH;
		String delete = "DELETE FROM " + table + " WHERE id = ANY(?)";
		try (Connection connection = dataSource.getConnection();
				PreparedStatement read = connection.prepareStatement(select);
				PreparedStatement remove = connection.prepareStatement(delete);
				KafkaProducer<String, byte[]> producer = new KafkaProducer<>(configs, new StringSerializer(),
						new ByteArraySerializer())) {
			connection.setAutoCommit(true);
			producer.partitionsFor(topic);
			long begin = System.nanoTime();
			int relayed = 0;
			while (relayed < events) {
				List<Long> ids = new ArrayList<>(BATCH);
				read.setString(1, topic);
				try (ResultSet rows = read.executeQuery()) {
					while (rows.next()) {
						ids.add(rows.getLong(1));
						ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, rows.getString(2),
								rows.getBytes(3));
						record.headers().add("X-Idempotency-Key", rows.getString(4).getBytes(StandardCharsets.UTF_8));
						producer.send(record);
					}
				}
				if (ids.isEmpty()) {
					throw new IllegalStateException("Relayed " + relayed + " of " + events + " events of " + topic);
				}
				producer.flush();
				Array array = connection.createArrayOf("bigint", ids.toArray());
				remove.setArray(1, array);
				remove.executeUpdate();
				relayed += ids.size();
			}
			return events / ((System.nanoTime() - begin) / 1e9);
		}
	}

}
