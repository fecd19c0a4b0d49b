package dev.idempotency.internal.metrics;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.idempotency.IdempotencyContext;
import dev.idempotency.Idempotent;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.test.TestApplication;
import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestRedis;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.yaml.snakeyaml.Yaml;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Every metric name and label that a panel or a variable of
 * {@code docs/observability/grafana/dashboards/idempotency-dashboard.json} or an alert rule
 * of {@code docs/observability/prometheus/idempotency-alerts.yml} queries is in the scrape
 * of an application with the Prometheus registry, after traffic through every decision:
 * processed, duplicate from the cache and from the store, failed, rejected, an outbox event
 * published and one dead. Real Kafka, PostgreSQL and Redis. The scrape is the registry's
 * ({@link PrometheusMeterRegistry#scrape()}, what {@code /actuator/prometheus} serves),
 * without a web server, with the labels Prometheus gives every series of a target
 * ({@code job}, {@code instance}). The application sets the {@code application} tag as the
 * documentation says.
 * <p>
 * The dashboard's variables are resolved from the scrape as Grafana resolves them from
 * Prometheus, in order, and substituted: a variable with one value by that value (so that
 * the value is checked too), one with several by its "All" value. The check extracts names
 * ({@code idempotency_...}), the label matchers that follow them, the labels of
 * {@code by (...)} clauses and {@code label_values(...)}; it does not parse PromQL (see
 * docs/operations.md).
 */
class DashboardScrapeIntegrationTests {

	private static final String TOPIC = "it-scrape";

	private static final String OUTBOX_TOPIC = "it-scrape-out";

	private static final String LEASE_TOPIC = "it-scrape-lease";

	private static final String APPLICATION = "dashboard-scrape";

	/**
	 * The labels Prometheus adds to every series it scrapes from a target.
	 */
	private static final Map<String, String> TARGET_LABELS = Map.of("job", "payments-ledger", "instance",
			"host.docker.internal:8080");

	private static final Pattern SELECTOR = Pattern.compile("\\b(idempotency_[a-z0-9_]+)\\s*(\\{([^}]*)\\})?");

	private static final Pattern MATCHER = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)\\s*\"([^\"]*)\"");

	private static final Pattern BY = Pattern.compile("\\b(?:by|without)\\s*\\(([^)]*)\\)");

	private static final Pattern LABEL_VALUES = Pattern
		.compile("label_values\\(\\s*(idempotency_[a-z0-9_]+)?\\s*(\\{([^}]*)\\})?\\s*,\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*\\)");

	private static final Pattern NAME_MATCHER = Pattern.compile("__name__\\s*=~\\s*\"([^\"]*)\"");

	private static final Pattern VARIABLE = Pattern.compile("\\$\\{?([a-zA-Z_][a-zA-Z0-9_]*)\\}?");

	private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)\\})?\\s+\\S+.*$");

	private static final Pattern SAMPLE_LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

	private static final TestRedis redis = TestRedis.start();

	// after-all callbacks run in reverse order: Redis stops after the application closed
	@RegisterExtension
	@Order(1)
	static final AfterAllCallback stopRedis = (extension) -> redis.close();

	@RegisterExtension
	@Order(2)
	static final TestApplication app = TestApplication.of(App.class)
		.topics(TOPIC, OUTBOX_TOPIC, LEASE_TOPIC)
		.properties(TestApplications.WITHOUT_JPA, TestApplications.WITH_RELAY, redis.springProperty(),
				"management.prometheus.metrics.export.enabled=true",
				"management.metrics.tags.application=" + APPLICATION, "idempotency.cache.enabled=true",
				"idempotency.missing-key=reject", "idempotency.outbox.table=scrape_outbox",
				"idempotency.flyway.table=scrape_schema_history", "idempotency.outbox.max-attempts=1",
				"idempotency.outbox.poll-interval=200ms", "spring.kafka.producer.properties[max.block.ms]=500",
				"spring.kafka.producer.properties[delivery.timeout.ms]=1500",
				"spring.kafka.producer.properties[request.timeout.ms]=1000");

	@Test
	void everyNameAndLabelOfTheDashboardAndTheAlertsIsInTheScrape() throws IOException {
		driveEveryDecision();
		Map<String, List<Map<String, String>>> scrape = parse(app.bean(PrometheusMeterRegistry.class).scrape());
		List<String> expressions = new ArrayList<>(dashboardExpressions(scrape));
		assertThat(expressions).hasSizeGreaterThan(15).noneMatch((expression) -> expression.contains("$"));
		List<String> alerts = alertExpressions();
		assertThat(alerts).hasSizeGreaterThanOrEqualTo(5);
		expressions.addAll(alerts);
		List<String> problems = new ArrayList<>();
		for (String expression : expressions) {
			problems.addAll(check(expression, scrape));
		}
		assertThat(problems).isEmpty();
	}

	private static void driveEveryDecision() {
		String run = UUID.randomUUID().toString().substring(0, 8);
		String key = run + "-a";
		// processed
		send(key, "ok");
		awaitCount("processed", "store", 1);
		// duplicate, from the cache (written after the commit)
		StringRedisTemplate redisTemplate = app.bean(StringRedisTemplate.class);
		await().atMost(Duration.ofSeconds(10)).until(() -> !redisTemplate.keys("idempotency:cache:*").isEmpty());
		send(key, "ok");
		awaitCount("duplicate", "cache", 1);
		// duplicate, from the store: the cache forgot the key (a mark of the cache hit
		// above, written after its commit, may land after the delete: then once more)
		for (int attempt = 0; attempt < 5 && count("duplicate", "store") < 1; attempt++) {
			double fromCache = count("duplicate", "cache");
			redisTemplate.delete(redisTemplate.keys("idempotency:cache:*"));
			send(key, "ok");
			await().atMost(Duration.ofSeconds(30))
				.until(() -> count("duplicate", "store") >= 1 || count("duplicate", "cache") > fromCache);
		}
		awaitCount("duplicate", "store", 1);
		// failed
		send(run + "-f", "fail");
		awaitCount("failed", "store", 1);
		// rejected: no key, policy reject
		app.send(TOPIC, "no key", null);
		awaitCount("rejected", "none", 1);
		// lease mode: a fingerprint mismatch, and a lease lost to a (simulated) takeover
		app.send(LEASE_TOPIC, "amount=10", run + "-l");
		app.send(LEASE_TOPIC, "amount=99", run + "-l");
		app.send(LEASE_TOPIC, "taken over", run + "-t");
		await().atMost(Duration.ofSeconds(30))
			.until(() -> app.count("idempotency.fingerprint.mismatches") == 1
					&& app.count("idempotency.lease.lost") == 1);
		// an outbox event published, and one dead (too large for its topic; one attempt)
		TransactionTemplate transactions = app.bean(TransactionTemplate.class);
		Outbox outbox = app.bean(Outbox.class);
		transactions.executeWithoutResult((status) -> outbox.publish(OUTBOX_TOPIC, "k", "v"));
		String tooSmall = "it-scrape-too-small-" + run;
		TestInfrastructure.createTopic(tooSmall, 1, Map.of("max.message.bytes", "1000"));
		transactions.executeWithoutResult((status) -> outbox.publish(tooSmall, "k", "v" + "x".repeat(2000)));
		await().atMost(Duration.ofSeconds(30))
			.until(() -> app.count("idempotency.outbox.published", "topic", OUTBOX_TOPIC) == 1
					&& app.bean(PrometheusMeterRegistry.class)
						.get("idempotency.outbox.dead")
						.gauge()
						.value() == 1);
	}

	private static void send(String key, String value) {
		app.send(TOPIC, value, key);
	}

	private static double count(String outcome, String source) {
		return app.count("idempotency.messages", "outcome", outcome, "source", source);
	}

	private static void awaitCount(String outcome, String source, double atLeast) {
		await().atMost(Duration.ofSeconds(30))
			.until(() -> app.count("idempotency.messages", "outcome", outcome, "source", source) >= atLeast);
	}

	/**
	 * The queries of the panels and of the variables, with the variables substituted.
	 */
	private static List<String> dashboardExpressions(Map<String, List<Map<String, String>>> scrape)
			throws IOException {
		JsonNode dashboard = JsonMapper.builder()
			.build()
			.readTree(Files.readString(ObservabilityFilesUnitTests.DASHBOARD));
		Map<String, String> values = new HashMap<>(Map.of("__rate_interval", "1m"));
		List<String> expressions = new ArrayList<>();
		for (JsonNode variable : dashboard.get("templating").get("list")) {
			if (variable.has("definition")) {
				String definition = substitute(variable.get("definition").asString(), values);
				expressions.add(definition);
				Set<String> resolved = labelValues(definition, scrape);
				values.put(variable.get("name").asString(),
						(resolved.size() == 1) ? resolved.iterator().next() : variable.get("allValue").asString());
			}
		}
		for (JsonNode panel : dashboard.get("panels")) {
			for (JsonNode target : panel.path("targets")) {
				expressions.add(substitute(target.get("expr").asString(), values));
			}
		}
		return expressions;
	}

	private static String substitute(String expression, Map<String, String> values) {
		return VARIABLE.matcher(expression)
			.replaceAll((variable) -> Matcher.quoteReplacement(values.getOrDefault(variable.group(1), variable.group())));
	}

	/**
	 * The values of a {@code label_values(selector, label)} query, over the series that
	 * its selector's name (or {@code __name__} regex) and exact or regex matchers select.
	 */
	private static Set<String> labelValues(String query, Map<String, List<Map<String, String>>> scrape) {
		Matcher labelValues = LABEL_VALUES.matcher(query);
		assertThat(labelValues.find()).as(query).isTrue();
		String matchers = (labelValues.group(3) != null) ? labelValues.group(3) : "";
		Set<String> values = new TreeSet<>();
		for (String name : selectedNames(labelValues, scrape)) {
			scrape.get(name)
				.stream()
				.filter((labels) -> selects(matchers, labels))
				.map((labels) -> labels.get(labelValues.group(4)))
				.filter(Objects::nonNull)
				.forEach(values::add);
		}
		return values;
	}

	/**
	 * The names of the scrape that the selector of a {@code label_values} query names, or
	 * whose names its {@code __name__} regex matches.
	 */
	private static List<String> selectedNames(Matcher labelValues, Map<String, List<Map<String, String>>> scrape) {
		if (labelValues.group(1) != null) {
			return scrape.containsKey(labelValues.group(1)) ? List.of(labelValues.group(1)) : List.of();
		}
		Matcher nameMatcher = NAME_MATCHER.matcher((labelValues.group(3) != null) ? labelValues.group(3) : "");
		if (!nameMatcher.find()) {
			return List.of();
		}
		Pattern names = Pattern.compile(nameMatcher.group(1));
		return scrape.keySet()
			.stream()
			.filter((name) -> name.startsWith("idempotency_") && names.matcher(name).matches())
			.sorted()
			.toList();
	}

	private static boolean selects(String matchers, Map<String, String> labels) {
		Matcher matcher = MATCHER.matcher(matchers);
		while (matcher.find()) {
			if (matcher.group(1).equals("__name__")) {
				continue;
			}
			String value = labels.getOrDefault(matcher.group(1), "");
			boolean matches = matcher.group(2).endsWith("~") ? value.matches(matcher.group(3))
					: value.equals(matcher.group(3));
			if (matches == matcher.group(2).startsWith("!")) {
				return false;
			}
		}
		return true;
	}

	/**
	 * The {@code expr} of each rule of the alert rules file.
	 */
	@SuppressWarnings("unchecked")
	private static List<String> alertExpressions() throws IOException {
		Map<String, Object> file = new Yaml().load(Files.readString(ObservabilityFilesUnitTests.ALERT_RULES));
		List<String> expressions = new ArrayList<>();
		for (Map<String, Object> group : (List<Map<String, Object>>) file.get("groups")) {
			for (Map<String, Object> rule : (List<Map<String, Object>>) group.get("rules")) {
				expressions.add(((String) rule.get("expr")).replaceAll("\\s+", " ").trim());
			}
		}
		return expressions;
	}

	private static List<String> check(String expression, Map<String, List<Map<String, String>>> scrape) {
		List<String> problems = new ArrayList<>();
		Set<String> names = new LinkedHashSet<>();
		Matcher labelValues = LABEL_VALUES.matcher(expression);
		while (labelValues.find()) {
			List<String> selected = selectedNames(labelValues, scrape);
			if (selected.isEmpty()) {
				problems.add(expression + ": selects no idempotency_ metric of the scrape");
			}
			for (String name : selected) {
				names.add(name);
				checkLabel(expression, name, labelValues.group(4), null, null, scrape, problems);
				if (labelValues.group(3) != null) {
					Matcher matcher = MATCHER.matcher(labelValues.group(3));
					while (matcher.find()) {
						if (!matcher.group(1).equals("__name__")) {
							checkLabel(expression, name, matcher.group(1), matcher.group(2), matcher.group(3), scrape,
									problems);
						}
					}
				}
			}
		}
		Matcher selector = SELECTOR.matcher(expression);
		while (selector.find()) {
			String name = selector.group(1);
			names.add(name);
			if (!scrape.containsKey(name)) {
				problems.add(expression + ": no " + name + " in the scrape");
				continue;
			}
			if (selector.group(3) != null) {
				Matcher matcher = MATCHER.matcher(selector.group(3));
				while (matcher.find()) {
					checkLabel(expression, name, matcher.group(1), matcher.group(2), matcher.group(3), scrape,
							problems);
				}
			}
		}
		if (names.isEmpty()) {
			problems.add(expression + ": queries no idempotency_ metric");
		}
		Matcher by = BY.matcher(expression);
		while (by.find()) {
			for (String label : by.group(1).split(",")) {
				String trimmed = label.trim();
				if (!trimmed.isEmpty() && names.stream()
					.noneMatch((name) -> scrape.getOrDefault(name, List.of())
						.stream()
						.anyMatch((labels) -> labels.containsKey(trimmed)))) {
					problems.add(expression + ": no series of " + names + " has the label " + trimmed);
				}
			}
		}
		return problems;
	}

	private static void checkLabel(String expression, String name, String label, String operator, String value,
			Map<String, List<Map<String, String>>> scrape, List<String> problems) {
		List<Map<String, String>> series = scrape.getOrDefault(name, List.of());
		if (series.stream().noneMatch((labels) -> labels.containsKey(label))) {
			problems.add(expression + ": " + name + " has no label " + label);
			return;
		}
		if (value == null || value.contains("$") || operator.startsWith("!")) {
			return;
		}
		// every alternative of a plain regex (a|b) or the exact value must be exported
		List<String> wanted = "=~".equals(operator) && value.matches("[A-Za-z0-9_.:|-]+")
				? List.of(value.split("\\|")) : ("=".equals(operator) ? List.of(value) : List.of());
		for (String one : wanted) {
			if (series.stream().noneMatch((labels) -> one.equals(labels.get(label)))) {
				problems.add(expression + ": no series of " + name + " with " + label + "=\"" + one + "\"");
			}
		}
	}

	private static Map<String, List<Map<String, String>>> parse(String scrape) {
		Map<String, List<Map<String, String>>> series = new HashMap<>();
		for (String line : scrape.split("\n")) {
			if (line.startsWith("#") || line.isBlank()) {
				continue;
			}
			Matcher sample = SAMPLE.matcher(line);
			if (!sample.matches()) {
				continue;
			}
			Map<String, String> labels = new LinkedHashMap<>(TARGET_LABELS);
			if (sample.group(3) != null) {
				Matcher label = SAMPLE_LABEL.matcher(sample.group(3));
				while (label.find()) {
					labels.put(label.group(1), label.group(2));
				}
			}
			series.computeIfAbsent(sample.group(1), (name) -> new ArrayList<>()).add(labels);
		}
		return series;
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		DefaultErrorHandler errorHandler() {
			return new DefaultErrorHandler(new FixedBackOff(0, 1));
		}

		@Bean
		Listener listener() {
			return new Listener();
		}

		@Bean
		LeaseListener leaseListener(JdbcTemplate jdbc) {
			return new LeaseListener(jdbc);
		}

	}

	static class Listener {

		@KafkaListener(id = "scrape", topics = TOPIC, groupId = "scrape")
		@Idempotent
		public void on(String value) {
			if ("fail".equals(value)) {
				throw new IllegalStateException("Simulated failure");
			}
		}

	}

	static class LeaseListener {

		private final JdbcTemplate jdbc;

		LeaseListener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(id = "scrape-lease", topics = LEASE_TOPIC, groupId = "scrape-lease")
		@Idempotent(mode = Idempotent.Mode.LEASE, fingerprint = true)
		public void on(String value) {
			if ("taken over".equals(value)) {
				// what another consumer's takeover after this one's lease expired does to the claim
				this.jdbc.update("UPDATE processed_messages SET fencing_token = "
						+ "nextval('processed_messages_fencing_seq') WHERE idempotency_key = ?",
						IdempotencyContext.key());
			}
		}

	}

}
