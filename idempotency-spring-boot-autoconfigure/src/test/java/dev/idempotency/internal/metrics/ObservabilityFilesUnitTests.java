package dev.idempotency.internal.metrics;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The files of {@code docs/observability} fit together: the operations page shows the
 * alert rules file as it is, every query of the dashboard is filtered by the
 * {@code application} and {@code instance} variables, every panel says what an empty
 * result means, and the Compose file mounts what the Prometheus and Grafana configuration
 * name. Whether the names and labels the queries use are in a real scrape is
 * {@link DashboardScrapeIntegrationTests}'s.
 */
class ObservabilityFilesUnitTests {

	static final Path OBSERVABILITY = Path.of("..", "docs", "observability");

	static final Path DASHBOARD = OBSERVABILITY.resolve("grafana/dashboards/idempotency-dashboard.json");

	static final Path ALERT_RULES = OBSERVABILITY.resolve("prometheus/idempotency-alerts.yml");

	private static final Path OPERATIONS = Path.of("..", "docs", "operations.md");

	private static final Pattern SELECTOR = Pattern.compile("\\b(idempotency_[a-z0-9_]+)\\s*(\\{([^}]*)\\})?");

	private static final List<String> FILTERS = List.of("application=~\"$application\"", "instance=~\"$instance\"");

	@Test
	void theOperationsPageShowsTheAlertRulesFileAsItIs() throws IOException {
		String rules = Files.readString(ALERT_RULES);
		assertThat(alertRules(rules)).hasSizeGreaterThanOrEqualTo(5);
		assertThat(yamlBlockUnder("## Alert rules", Files.readString(OPERATIONS))).isEqualTo(rules);
	}

	@Test
	void everyQueryOfTheDashboardIsFilteredByApplicationAndInstance() throws IOException {
		JsonNode dashboard = dashboard();
		List<String> unfiltered = new ArrayList<>();
		List<String> queries = new ArrayList<>();
		for (JsonNode panel : dashboard.get("panels")) {
			for (JsonNode target : panel.path("targets")) {
				queries.add(target.get("expr").asString());
			}
		}
		assertThat(queries).hasSizeGreaterThan(15);
		for (String query : queries) {
			Matcher selector = SELECTOR.matcher(query);
			while (selector.find()) {
				String matchers = (selector.group(3) != null) ? selector.group(3) : "";
				if (!FILTERS.stream().allMatch(matchers::contains)) {
					unfiltered.add(selector.group());
				}
			}
		}
		assertThat(unfiltered).as("selectors without %s", FILTERS).isEmpty();
		Map<String, JsonNode> variables = variables(dashboard);
		assertThat(variables).containsKeys("datasource", "application", "instance", "listener");
		// each variable lists the values left by the ones before it
		assertThat(variables.get("instance").get("definition").asString()).contains(FILTERS.get(0));
		assertThat(variables.get("listener").get("definition").asString()).contains(FILTERS);
		for (String name : List.of("application", "instance", "listener")) {
			JsonNode variable = variables.get(name);
			assertThat(variable.get("includeAll").asBoolean()).as(name).isTrue();
			assertThat(variable.get("allValue").asString()).as(name).isEqualTo(".*");
			assertThat(variable.get("query").get("query").asString()).as(name)
				.isEqualTo(variable.get("definition").asString());
		}
	}

	@Test
	void everyPanelSaysWhatAnEmptyResultMeans() throws IOException {
		List<String> withoutNoValue = new ArrayList<>();
		for (JsonNode panel : dashboard().get("panels")) {
			if (!"row".equals(panel.get("type").asString())
					&& panel.path("fieldConfig").path("defaults").path("noValue").asString("").isEmpty()) {
				withoutNoValue.add(panel.get("title").asString());
			}
		}
		assertThat(withoutNoValue).isEmpty();
	}

	@Test
	@SuppressWarnings("unchecked")
	void theComposeFileMountsWhatTheConfigurationNames() throws IOException {
		Map<String, Object> compose = yaml(OBSERVABILITY.resolve("compose.yaml"));
		Map<String, Object> services = (Map<String, Object>) compose.get("services");
		assertThat(services).containsOnlyKeys("prometheus", "grafana");
		Map<String, Path> prometheusMounts = mounts((Map<String, Object>) services.get("prometheus"));
		Map<String, Path> grafanaMounts = mounts((Map<String, Object>) services.get("grafana"));
		assertThat(prometheusMounts.values()).allMatch(Files::isDirectory);
		assertThat(grafanaMounts.values()).allMatch(Files::isDirectory);

		Map<String, Object> prometheus = yaml(OBSERVABILITY.resolve("prometheus/prometheus.yml"));
		for (String ruleFile : (List<String>) prometheus.get("rule_files")) {
			assertThat(onHost(prometheusMounts, "/etc/prometheus/" + ruleFile)).isEqualTo(ALERT_RULES.normalize());
		}
		Map<String, Object> job = ((List<Map<String, Object>>) prometheus.get("scrape_configs")).get(0);
		assertThat(job).containsEntry("metrics_path", "/actuator/prometheus");

		Path provisioning = onHost(grafanaMounts, "/etc/grafana/provisioning");
		Map<String, Object> dataSource = ((List<Map<String, Object>>) yaml(
				provisioning.resolve("datasources/prometheus.yml"))
			.get("datasources")).get(0);
		assertThat(dataSource).containsEntry("type", "prometheus")
			.containsEntry("url", "http://prometheus:9090")
			.containsEntry("isDefault", true);
		Map<String, Object> provider = ((List<Map<String, Object>>) yaml(
				provisioning.resolve("dashboards/idempotency.yml"))
			.get("providers")).get(0);
		String path = (String) ((Map<String, Object>) provider.get("options")).get("path");
		assertThat(onHost(grafanaMounts, path)).isEqualTo(DASHBOARD.getParent().normalize());
	}

	private static JsonNode dashboard() throws IOException {
		return JsonMapper.builder().build().readTree(Files.readString(DASHBOARD));
	}

	private static Map<String, JsonNode> variables(JsonNode dashboard) {
		Map<String, JsonNode> variables = new LinkedHashMap<>();
		for (JsonNode variable : dashboard.get("templating").get("list")) {
			variables.put(variable.get("name").asString(), variable);
		}
		return variables;
	}

	@SuppressWarnings("unchecked")
	private static List<Object> alertRules(String rules) {
		Map<String, Object> file = new Yaml().load(rules);
		List<Object> all = new ArrayList<>();
		for (Map<String, Object> group : (List<Map<String, Object>>) file.get("groups")) {
			all.addAll((List<Object>) group.get("rules"));
		}
		return all;
	}

	/**
	 * The first {@code ```yaml} block after the heading, with its final newline.
	 */
	private static String yamlBlockUnder(String heading, String markdown) {
		int start = markdown.indexOf("```yaml\n", markdown.indexOf("\n" + heading + "\n"));
		assertThat(start).as("a yaml block under " + heading).isPositive();
		start += "```yaml\n".length();
		return markdown.substring(start, markdown.indexOf("```\n", start));
	}

	private static Map<String, Object> yaml(Path file) throws IOException {
		return new Yaml().load(Files.readString(file));
	}

	/**
	 * The bind mounts of a service: the path in the container, and the directory on the
	 * host (relative to the Compose file).
	 */
	@SuppressWarnings("unchecked")
	private static Map<String, Path> mounts(Map<String, Object> service) {
		Map<String, Path> mounts = new LinkedHashMap<>();
		for (String volume : (List<String>) service.get("volumes")) {
			String[] parts = volume.split(":");
			mounts.put(parts[1], OBSERVABILITY.resolve(parts[0]).normalize());
		}
		assertThat(mounts).isNotEmpty();
		return mounts;
	}

	private static Path onHost(Map<String, Path> mounts, String containerPath) {
		for (Map.Entry<String, Path> mount : mounts.entrySet()) {
			if (containerPath.equals(mount.getKey()) || containerPath.startsWith(mount.getKey() + "/")) {
				return mount.getValue().resolve(containerPath.substring(mount.getKey().length()).replaceFirst("^/", ""))
					.normalize();
			}
		}
		throw new AssertionError(containerPath + " is not mounted (mounts: " + mounts + ")");
	}

}
