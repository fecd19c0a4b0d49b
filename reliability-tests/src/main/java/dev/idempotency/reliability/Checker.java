package dev.idempotency.reliability;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Consumer;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Counts every effect after the run has drained, from the database and the topics:
 * every transfer applied exactly once (those of the batch listener too), balances that add
 * up, every outbox event on the output topic, in order per account for first occurrences,
 * and nothing left pending, dead or dead-lettered; every payment of the lease-mode
 * listener charged as the lease mode promises (see {@link LeaseCount}); and every request
 * of the HTTP handler applied exactly once and answered, its event on the output topic with
 * the transfers' events, in order per account (see {@link HttpCount}).
 */
final class Checker {

	static final String DEAD_LETTER_SUFFIX = ".DLT";

	static final String DEAD_LETTER_TOPIC = TransferListeners.TOPIC + DEAD_LETTER_SUFFIX;

	private final String jdbcUrl;

	private final String bootstrapServers;

	private final List<String> modeTopics;

	Checker(String jdbcUrl, String bootstrapServers, List<String> modeTopics) {
		this.jdbcUrl = jdbcUrl;
		this.bootstrapServers = bootstrapServers;
		this.modeTopics = modeTopics;
	}

	/**
	 * Return the topics of the listeners other than the transactional one that a run
	 * reads, each with a dead-letter topic.
	 */
	static List<String> modeTopics(RunOptions options) {
		List<String> topics = new ArrayList<>();
		if (options.runs(RunOptions.BATCH)) {
			topics.add(TransferListeners.BATCH_TOPIC);
		}
		if (options.runs(RunOptions.LEASE)) {
			topics.add(PaymentListeners.TOPIC);
		}
		return topics;
	}

	/**
	 * What the driver injected, as the summary reports it.
	 * @param duplicatesInjected records sent again by the producer or replayed
	 * @param kills SIGKILLs of workload processes
	 * @param redisRestarts Redis restarts
	 * @param dbKills rounds of {@code pg_terminate_backend}
	 * @param networkFaults network faults that took effect (see {@link NetworkProxy})
	 * @param pgCrashes crashes of PostgreSQL (every process SIGKILLed), each recovered
	 * @param pgOutageSeconds how long PostgreSQL was down in all, by stops and crashes
	 * @param redisOutageSeconds how long Redis was down in all, by restarts and long outages
	 * @param modes what the workload ran (see {@link RunOptions#modes()})
	 * @param brokerKills SIGKILLs of one Kafka broker whose leadership moved (see {@link BrokerKill})
	 * @param http what the HTTP client did (no requests without the HTTP handler)
	 * @param httpDroppedResponses HTTP responses the proxies dropped
	 */
	record Faults(long duplicatesInjected, long kills, long redisRestarts, long dbKills, long networkFaults,
			long pgCrashes, double pgOutageSeconds, double redisOutageSeconds, String modes, long brokerKills,
			HttpTraffic.Totals http, long httpDroppedResponses) {

	}

	/**
	 * The requests of the HTTP handler: how the client sent them, and how often each was
	 * applied, by its rows in {@code http_effects}.
	 * @param requests unique requests sent
	 * @param retries attempts after the first of each request
	 * @param droppedResponses responses the proxies dropped
	 * @param unanswered requests without a definite answer, or with a wrong one
	 * @param appliedOnce requests applied once
	 * @param appliedTwice requests applied more than once
	 * @param lost requests never applied
	 * @param applications rows of {@code http_effects}: every application
	 */
	record HttpCount(long requests, long retries, long droppedResponses, long unanswered, long appliedOnce,
			long appliedTwice, long lost, long applications) {

		static HttpCount none() {
			return new HttpCount(0, 0, 0, 0, 0, 0, 0, 0);
		}

	}

	/**
	 * The counts of a run and what they break. The transfers of the batch listener count in
	 * {@code appliedOnce}, {@code appliedTwice} and {@code lost} like the others, and apart in
	 * {@code batchAppliedOnce} and {@code batchAppliedTwice}; the payments of the lease-mode
	 * listener in {@code lease}; the requests of the HTTP handler in {@code http} (their
	 * events count in {@code outboxLost} and {@code orderViolations} with the transfers').
	 */
	record Verdict(long events, long duplicatesInjected, long kills, long redisRestarts, long dbKills,
			long networkFaults, long pgCrashes, double pgOutageSeconds, double redisOutageSeconds, String modes,
			long appliedOnce, long appliedTwice, long lost, long outboxLost, long orderViolations,
			long batchAppliedOnce, long batchAppliedTwice, LeaseCount lease, List<String> violations,
			long brokerKills, HttpCount http) {

		boolean passed() {
			return this.violations.isEmpty();
		}

		String summary() {
			return "events=" + this.events + " duplicates_injected=" + this.duplicatesInjected + " kills=" + this.kills
					+ " redis_restarts=" + this.redisRestarts + " db_kills=" + this.dbKills + " network_faults="
					+ this.networkFaults + " pg_crashes=" + this.pgCrashes + " broker_kills=" + this.brokerKills
					+ " pg_outage_s="
					+ String.format(Locale.ROOT, "%.1f", this.pgOutageSeconds) + " redis_outage_s="
					+ String.format(Locale.ROOT, "%.1f", this.redisOutageSeconds) + " modes=" + this.modes
					+ " batch_applied_once=" + this.batchAppliedOnce + " payments=" + this.lease.payments()
					+ " lease_applied_once=" + this.lease.appliedOnce() + " lease_reruns=" + this.lease.reruns()
					+ " lease_fenced=" + this.lease.fenced() + " http_requests=" + this.http.requests()
					+ " http_retries=" + this.http.retries() + " http_dropped_responses="
					+ this.http.droppedResponses() + " http_applied_once=" + this.http.appliedOnce()
					+ " applied_once=" + this.appliedOnce
					+ " applied_twice=" + this.appliedTwice + " lost=" + this.lost + " outbox_lost=" + this.outboxLost
					+ " order_violations=" + this.orderViolations + " lease_applied_twice=" + this.lease.appliedTwice()
					+ " lease_lost=" + this.lease.lost() + " fence_violations=" + this.lease.fenceViolations()
					+ " http_applied_twice=" + this.http.appliedTwice() + " http_lost=" + this.http.lost()
					+ " http_unanswered=" + this.http.unanswered();
		}

	}

	/**
	 * Count the effects of a drained run.
	 * @param faults what the driver injected, for the summary
	 * @param crashLosses what PostgreSQL's crashes lost of what was committed before
	 * them (see {@link CrashWitness}), one violation each
	 */
	Verdict check(Faults faults, List<String> crashLosses) throws SQLException {
		List<String> violations = new ArrayList<>(crashLosses);
		long events;
		long once;
		long twice;
		long lost;
		long batchOnce = 0;
		long batchTwice = 0;
		LeaseCount lease = LeaseCount.none();
		HttpCount http = HttpCount.none();
		Map<String, String> effects = new HashMap<>();
		try (Connection connection = DriverManager.getConnection(this.jdbcUrl, "postgres", "postgres");
				Statement statement = connection.createStatement()) {
			try (ResultSet counts = statement.executeQuery("""
					SELECT count(*), count(*) FILTER (WHERE applied = 1), count(*) FILTER (WHERE applied > 1),
					       count(*) FILTER (WHERE applied = 0)
					FROM (SELECT t.id, count(e.transfer_id) AS applied
					      FROM transfers_sent t LEFT JOIN transfer_effects e ON e.transfer_id = t.id
					      GROUP BY t.id) applied""")) {
				counts.next();
				events = counts.getLong(1);
				once = counts.getLong(2);
				twice = counts.getLong(3);
				lost = counts.getLong(4);
			}
			if (this.modeTopics.contains(TransferListeners.BATCH_TOPIC)) {
				// the batch listener's transfers (see TransferListeners.topic)
				try (ResultSet counts = statement.executeQuery("""
						SELECT count(*) FILTER (WHERE applied = 1), count(*) FILTER (WHERE applied > 1)
						FROM (SELECT t.id, count(e.transfer_id) AS applied
						      FROM transfers_sent t LEFT JOIN transfer_effects e ON e.transfer_id = t.id
						      WHERE t.id % 5 = 4 GROUP BY t.id) applied""")) {
					counts.next();
					batchOnce = counts.getLong(1);
					batchTwice = counts.getLong(2);
				}
			}
			if (this.modeTopics.contains(PaymentListeners.TOPIC)) {
				lease = leaseCount(statement);
				violations.addAll(lease.violations());
			}
			if (faults.http().requests() > 0) {
				http = httpCount(statement, faults);
				violations.addAll(httpViolations(http));
			}
			violations.addAll(balances(statement));
			long pending = single(statement, "SELECT count(*) FROM outbox WHERE status = 'PENDING'");
			long dead = single(statement, "SELECT count(*) FROM outbox WHERE status = 'DEAD'");
			if (pending > 0 || dead > 0) {
				violations.add("outbox not empty: " + pending + " pending, " + dead + " dead");
			}
			try (ResultSet rows = statement.executeQuery(
					"SELECT event_id, account FROM transfer_effects UNION ALL SELECT event_id, account FROM http_effects")) {
				while (rows.next()) {
					effects.put(rows.getString(1), rows.getString(2));
				}
			}
		}
		if (twice > 0) {
			violations.add(twice + " transfers applied more than once (" + batchTwice + " of them by the batch listener)");
		}
		if (lost > 0) {
			violations.add(lost + " transfers never applied");
		}
		long deadLettered = readTopic(DEAD_LETTER_TOPIC, (record) -> {
		});
		if (deadLettered > 0) {
			violations.add(deadLettered + " transfers dead-lettered");
		}
		for (String topic : this.modeTopics) {
			long modeDeadLettered = readTopic(topic + DEAD_LETTER_SUFFIX, (record) -> {
			});
			if (modeDeadLettered > 0) {
				violations.add(modeDeadLettered + " records of " + topic + " dead-lettered");
			}
		}
		Set<String> published = new HashSet<>();
		Map<String, Long> lastSequence = new HashMap<>();
		long[] orderViolations = { 0 };
		readTopic(Ledger.EVENTS_TOPIC, (record) -> {
			Header header = record.headers().lastHeader(TransferProducer.KEY_HEADER);
			String eventId = (header != null) ? new String(header.value(), StandardCharsets.UTF_8) : null;
			if (eventId == null || !published.add(eventId)) {
				return;
			}
			String[] fields = record.value().split(",");
			long sequence = Long.parseLong(fields[2]);
			Long previous = lastSequence.put(record.key(), sequence);
			if (previous != null && previous >= sequence) {
				orderViolations[0]++;
				lastSequence.put(record.key(), previous);
			}
		});
		long outboxLost = effects.keySet().stream().filter((eventId) -> !published.contains(eventId)).count();
		if (outboxLost > 0) {
			violations.add(outboxLost + " outbox events not on " + Ledger.EVENTS_TOPIC);
		}
		if (orderViolations[0] > 0) {
			violations.add(orderViolations[0] + " events published before an older event of their account");
		}
		return new Verdict(events, faults.duplicatesInjected(), faults.kills(), faults.redisRestarts(),
				faults.dbKills(), faults.networkFaults(), faults.pgCrashes(), faults.pgOutageSeconds(),
				faults.redisOutageSeconds(), faults.modes(), once, twice, lost, outboxLost, orderViolations[0],
				batchOnce, batchTwice, lease, List.copyOf(violations), faults.brokerKills(), http);
	}

	private static HttpCount httpCount(Statement statement, Faults faults) throws SQLException {
		try (ResultSet counts = statement.executeQuery("""
				SELECT count(*) FILTER (WHERE applied = 1), count(*) FILTER (WHERE applied > 1),
				       count(*) FILTER (WHERE applied = 0), coalesce(sum(applied), 0)
				FROM (SELECT r.id, count(e.request_id) AS applied
				      FROM http_requests_sent r LEFT JOIN http_effects e ON e.request_id = r.id
				      GROUP BY r.id) applied""")) {
			counts.next();
			return new HttpCount(faults.http().requests(), faults.http().retries(), faults.httpDroppedResponses(),
					faults.http().unanswered(), counts.getLong(1), counts.getLong(2), counts.getLong(3),
					counts.getLong(4));
		}
	}

	static List<String> httpViolations(HttpCount http) {
		List<String> violations = new ArrayList<>();
		if (http.appliedTwice() > 0) {
			violations.add(http.appliedTwice() + " HTTP requests applied more than once (" + http.applications()
					+ " applications of " + http.requests() + " requests)");
		}
		if (http.lost() > 0) {
			violations.add(http.lost() + " HTTP requests never applied");
		}
		if (http.unanswered() > 0) {
			violations.add(http.unanswered() + " HTTP requests without a definite answer");
		}
		// the fault the mode is about must have happened
		if (http.droppedResponses() == 0) {
			violations.add("no HTTP response was dropped: the HTTP requests were never retried after an unknown outcome");
		}
		return violations;
	}

	static LeaseCount leaseCount(Statement statement) throws SQLException {
		List<Long> payments = new ArrayList<>();
		try (ResultSet rows = statement.executeQuery("SELECT id FROM payments_sent")) {
			while (rows.next()) {
				payments.add(rows.getLong(1));
			}
		}
		List<LeaseCount.Call> calls = new ArrayList<>();
		try (ResultSet rows = statement
			.executeQuery("SELECT payment_id, fencing_token, accepted FROM provider.charges ORDER BY id")) {
			while (rows.next()) {
				calls.add(new LeaseCount.Call(rows.getLong(1), rows.getLong(2), rows.getBoolean(3)));
			}
		}
		return LeaseCount.of(payments, calls);
	}

	private static List<String> balances(Statement statement) throws SQLException {
		List<String> violations = new ArrayList<>();
		long total = single(statement, "SELECT sum(balance) FROM accounts");
		long initial = single(statement, "SELECT sum(initial_balance) FROM accounts");
		if (total != initial) {
			violations.add("balances sum to " + total + ", not the initial " + initial);
		}
		long wrong = single(statement, """
				SELECT count(*) FROM accounts a
				WHERE a.balance <> a.initial_balance
				    + coalesce((SELECT sum(amount) FROM transfers_sent WHERE to_account = a.id), 0)
				    - coalesce((SELECT sum(amount) FROM transfers_sent WHERE from_account = a.id), 0)
				    + coalesce((SELECT sum(amount) FROM http_requests_sent WHERE to_account = a.id), 0)
				    - coalesce((SELECT sum(amount) FROM http_requests_sent WHERE from_account = a.id), 0)""");
		if (wrong > 0) {
			violations.add(wrong + " accounts whose balance is not the sum of their transfers");
		}
		return violations;
	}

	private static long single(Statement statement, String sql) throws SQLException {
		try (ResultSet result = statement.executeQuery(sql)) {
			result.next();
			return result.getLong(1);
		}
	}

	private long readTopic(String topic, Consumer<ConsumerRecord<String, String>> action) {
		Properties properties = new Properties();
		properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, this.bootstrapServers);
		properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
		properties.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
		long count = 0;
		try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(properties, new StringDeserializer(),
				new StringDeserializer())) {
			List<TopicPartition> partitions = new ArrayList<>();
			for (PartitionInfo partition : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
				partitions.add(new TopicPartition(topic, partition.partition()));
			}
			Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
			// one partition at a time, in offset order: order is checked per partition
			for (TopicPartition partition : partitions) {
				consumer.assign(List.of(partition));
				consumer.seekToBeginning(List.of(partition));
				while (consumer.position(partition, Duration.ofSeconds(30)) < end.get(partition)) {
					for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofSeconds(1))) {
						if (record.offset() < end.get(partition)) {
							action.accept(record);
							count++;
						}
					}
				}
			}
		}
		return count;
	}

}
