package dev.idempotency.sample;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Measurement;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Reads what a demo run left once everything drained: its payments in the database with
 * their ledger entries, statement lines and balances, their rejection events on the
 * {@code payment-rejected} topic, and the starter's meters, with the outbox gauges as
 * fresh as the table.
 */
final class DemoAudit {

	// the outbox gauges are refreshed every 10 s
	private static final Duration GAUGE_REFRESH = Duration.ofSeconds(15);

	private final JdbcTemplate jdbc;

	private final MeterRegistry meters;

	private final PublishedEvents events;

	DemoAudit(JdbcTemplate jdbc, MeterRegistry meters, PublishedEvents events) {
		this.jdbc = jdbc;
		this.meters = meters;
		this.events = events;
	}

	/**
	 * Return how many requests to {@code POST /payments} the starter answered with a
	 * stored response so far.
	 * @return the count
	 */
	double replayedRequests() {
		return messages("PaymentController.create", "duplicate", "store");
	}

	DemoVerdict verdict(Demo.Traffic traffic, boolean drained, Duration took) throws InterruptedException {
		DemoVerdict.Http http = new DemoVerdict.Http(traffic.payments, traffic.overdrafts.size(), traffic.httpRetries,
				traffic.answeredDifferently, traffic.wronglyMarked,
				replayedRequests() - traffic.replayedRequestsBefore);
		DemoVerdict.Redeliveries redeliveries = new DemoVerdict.Redeliveries(traffic.resent, traffic.replayed,
				traffic.redisOutage, messages("PaymentListener.onPayment", "duplicate", "cache"),
				messages("PaymentListener.onPayment", "duplicate", "store"));
		boolean gaugesFresh = awaitFreshGauges();
		return new DemoVerdict(http, ledger(traffic), redeliveries, drained, took, gaugesFresh, starterMeters());
	}

	private DemoVerdict.Ledger ledger(Demo.Traffic traffic) {
		OffsetDateTime since = traffic.since;
		Map<String, BigDecimal> expected = new TreeMap<>();
		Map<String, BigDecimal> actual = new TreeMap<>();
		this.jdbc.query("""
				SELECT a.id, a.balance, a.opening_balance - coalesce(sum(p.amount), 0) AS expected
				FROM accounts a LEFT JOIN payments p ON p.account_id = a.id AND p.status <> 'REJECTED'
				GROUP BY a.id, a.balance, a.opening_balance""", (row) -> {
			expected.put(row.getString("id"), row.getBigDecimal("expected"));
			actual.put(row.getString("id"), row.getBigDecimal("balance"));
		});
		long created = this.jdbc.queryForObject("SELECT count(*) FROM payments WHERE created_at >= ?", Long.class,
				since);
		long booked = this.jdbc.queryForObject(
				"SELECT count(*) FROM payments WHERE created_at >= ? AND status = 'BOOKED'", Long.class, since);
		Set<UUID> rejected = new HashSet<>(this.jdbc.queryForList(
				"SELECT id FROM payments WHERE created_at >= ? AND status = 'REJECTED'", UUID.class, since));
		// rejected and not an overdraft, or an overdraft not rejected
		long decidedOtherwise = rejected.stream().filter((payment) -> !traffic.overdrafts.contains(payment)).count()
				+ traffic.overdrafts.stream().filter((payment) -> !rejected.contains(payment)).count();
		// a booked payment has one ledger entry and one statement line; a rejected one none
		long withoutTheirEntry = this.jdbc.queryForObject("""
				SELECT count(*) FROM payments p
				WHERE p.created_at >= ?
				AND (SELECT count(*) FROM ledger_entries l WHERE l.payment_id = p.id)
				    <> CASE p.status WHEN 'BOOKED' THEN 1 ELSE 0 END""", Long.class, since);
		long withoutTheirLine = this.jdbc.queryForObject("""
				SELECT count(*) FROM payments p
				WHERE p.created_at >= ?
				AND (SELECT count(*) FROM statement_lines s WHERE s.payment_id = p.id)
				    <> CASE p.status WHEN 'BOOKED' THEN 1 ELSE 0 END""", Long.class, since);
		Map<UUID, Set<UUID>> rejections = this.events.eventIdsByPayment(PaymentListener.PAYMENT_REJECTED_TOPIC,
				Duration.ofSeconds(30));
		List<UUID> payments = this.jdbc.queryForList("SELECT id FROM payments WHERE created_at >= ?", UUID.class,
				since);
		long withoutTheirRejection = payments.stream()
			.filter((payment) -> rejections.getOrDefault(payment, Set.of()).size() != (rejected.contains(payment) ? 1
					: 0))
			.count();
		return new DemoVerdict.Ledger(created, booked, rejected.size(), decidedOtherwise, expected, actual,
				withoutTheirEntry, withoutTheirLine, withoutTheirRejection, sum("idempotency.outbox.published"));
	}

	// until the outbox gauges show what the table holds now
	private boolean awaitFreshGauges() throws InterruptedException {
		long deadline = System.nanoTime() + GAUGE_REFRESH.toNanos();
		while (true) {
			Map<String, Object> table = this.jdbc.queryForMap("""
					SELECT count(*) FILTER (WHERE status = 'PENDING') AS pending,
					       count(*) FILTER (WHERE status = 'DEAD') AS dead
					FROM outbox""");
			if (gaugeShows("idempotency.outbox.pending", table.get("pending"))
					&& gaugeShows("idempotency.outbox.dead", table.get("dead"))) {
				return true;
			}
			if (System.nanoTime() > deadline) {
				return false;
			}
			Thread.sleep(250);
		}
	}

	private boolean gaugeShows(String name, Object count) {
		Gauge gauge = this.meters.find(name).gauge();
		return gauge == null || gauge.value() == ((Number) count).doubleValue();
	}

	private double messages(String listener, String outcome, String source) {
		return this.meters.find("idempotency.messages")
			.tag("listener", listener)
			.tag("outcome", outcome)
			.tag("source", source)
			.counters()
			.stream()
			.mapToDouble(Counter::count)
			.sum();
	}

	private double sum(String name) {
		return this.meters.find(name).counters().stream().mapToDouble(Counter::count).sum();
	}

	private List<String> starterMeters() {
		List<String> lines = new ArrayList<>();
		for (Meter meter : this.meters.getMeters()) {
			if (meter.getId().getName().startsWith("idempotency.")) {
				StringBuilder line = new StringBuilder(meter.getId().getName());
				meter.getId().getTags().forEach((tag) -> line.append(' ').append(tag.getKey()).append('=').append(tag.getValue()));
				for (Measurement measurement : meter.measure()) {
					line.append(" | ")
						.append(measurement.getStatistic().getTagValueRepresentation())
						.append(' ')
						.append(String.format("%.4g", measurement.getValue()));
				}
				lines.add(line.toString());
			}
		}
		lines.sort(null);
		return lines;
	}

}
