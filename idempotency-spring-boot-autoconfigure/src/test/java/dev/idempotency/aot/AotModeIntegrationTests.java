package dev.idempotency.aot;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import dev.idempotency.test.TestApplications;
import dev.idempotency.test.TestInfrastructure;
import dev.idempotency.test.TestKafka;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.boot.SpringApplicationAotProcessor;
import org.springframework.context.aot.AbstractAotProcessor;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.kafka.listener.KafkaListenerErrorHandler;
import org.springframework.util.FileSystemUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * An application with the starter processed ahead of time, as the {@code process-aot} goal
 * of Spring Boot's Maven plugin does, then run on the JVM from the generated code
 * ({@code -Dspring.aot.enabled=true}), in a JVM of its own, against real Kafka and
 * PostgreSQL: each record, sent twice, is applied once. The processing also leaves the
 * starter's hints in the reachability metadata a native image is built with (its
 * migrations, the fields it reads, the proxy of an error handler declared as the
 * interface), and the classes of the listener's and of an error handler's proxies among
 * the generated classes. No native image is built.
 */
class AotModeIntegrationTests {

	// the module's build directory: target, or that of a profile (target/boot-4.0)
	private static final Path OUTPUT = Path.of(System.getProperty("idempotency.test.build-directory", "target"),
			"aot-mode");

	private static final int RECORDS = 20;

	@Test
	void anApplicationProcessedAheadOfTimeAppliesEachRecordOnce() throws Exception {
		String url = createDatabase("aot_mode");
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		JdbcTemplate jdbc = new JdbcTemplate(new DriverManagerDataSource(url, postgres.username(), postgres.password()));
		jdbc.execute("CREATE TABLE " + AotApplication.EFFECTS_TABLE + " (value VARCHAR(100) NOT NULL)");
		TestInfrastructure.createTopic(AotApplication.TOPIC, 1);
		List<String> arguments = arguments(url);

		FileSystemUtils.deleteRecursively(OUTPUT);
		Path sources = OUTPUT.resolve("sources");
		Path resources = OUTPUT.resolve("resources");
		Path classes = OUTPUT.resolve("classes");
		new SpringApplicationAotProcessor(AotApplication.class,
				AbstractAotProcessor.Settings.builder()
					.sourceOutput(sources)
					.resourceOutput(resources)
					.classOutput(classes)
					.groupId("dev.idempotency")
					.artifactId("aot-mode")
					.build(),
				arguments.toArray(String[]::new))
			.process();
		compile(sources, classes);

		JsonNode metadata = JsonMapper.builder()
			.build()
			.readTree(Files.readString(
					resources.resolve("META-INF/native-image/dev.idempotency/aot-mode/reachability-metadata.json")));
		assertThat(metadata.get("resources").findValuesAsString("glob")).contains("db/idempotency/postgresql/*.sql");
		assertThat(fields(metadata, "org.springframework.kafka.config.AbstractKafkaListenerContainerFactory"))
			.contains("recordFilterStrategy", "containerCustomizer");
		assertThat(fields(metadata, "org.springframework.kafka.retrytopic.RetryTopicConfigurer"))
			.contains("listenerContainerFactoryConfigurer");
		assertThat(metadata.get("reflection").findValues("proxy"))
			.anyMatch((proxy) -> proxy.get(0).asString().equals(KafkaListenerErrorHandler.class.getName()));
		try (Stream<Path> generated = Files.walk(classes)) {
			assertThat(generated.map((file) -> file.getFileName().toString()))
				.anyMatch((name) -> name.startsWith("AotApplication$Listener$$SpringCGLIB$$"))
				.anyMatch((name) -> name.startsWith("AotApplication$RethrowingErrorHandler$$SpringCGLIB$$"));
		}

		for (int i = 0; i < RECORDS; i++) {
			TestKafka.send(AotApplication.TOPIC, 0, "event-" + i, Map.of("event-id", "event-" + i));
		}
		// the same events again: a producer retry, a replay
		for (int i = 0; i < RECORDS; i++) {
			TestKafka.send(AotApplication.TOPIC, 0, "event-" + i, Map.of("event-id", "event-" + i));
		}
		Path log = OUTPUT.resolve("application.log");
		Process application = start(classes, resources, arguments, log);
		try {
			TopicPartition partition = new TopicPartition(AotApplication.TOPIC, 0);
			long end = TestKafka.endOffset(partition);
			// a loaded machine takes over a minute to start the application's JVM
			await().atMost(Duration.ofMinutes(3))
				.until(() -> !application.isAlive() || TestKafka.committedOffset("aot", partition) == end);
			assertThat(application.isAlive()).as(() -> tail(log)).isTrue();
			assertThat(Files.readString(log)).contains("Starting AOT-processed AotApplication");
			assertThat(jdbc.queryForObject("SELECT count(*) FROM " + AotApplication.EFFECTS_TABLE, Integer.class))
				.as(() -> tail(log))
				.isEqualTo(RECORDS);
			assertThat(jdbc.queryForObject("SELECT count(DISTINCT value) FROM " + AotApplication.EFFECTS_TABLE,
					Integer.class))
				.isEqualTo(RECORDS);
		}
		finally {
			application.destroy();
			if (!application.waitFor(30, TimeUnit.SECONDS)) {
				application.destroyForcibly();
			}
		}
	}

	private static List<String> fields(JsonNode metadata, String type) {
		List<String> fields = new ArrayList<>();
		for (JsonNode hint : metadata.get("reflection")) {
			// a proxy's type is an object
			if (hint.path("type").isString() && type.equals(hint.get("type").asString())) {
				hint.path("fields").forEach((field) -> fields.add(field.get("name").asString()));
			}
		}
		return fields;
	}

	private static List<String> arguments(String url) {
		Map<String, Object> properties = new LinkedHashMap<>(TestInfrastructure.springProperties());
		properties.put("spring.datasource.url", url);
		List<String> arguments = new ArrayList<>();
		properties.forEach((name, value) -> arguments.add("--" + name + "=" + value));
		arguments.add("--" + TestApplications.WITHOUT_JPA);
		arguments.add("--spring.main.web-application-type=none");
		arguments.add("--spring.main.banner-mode=off");
		arguments.add("--spring.flyway.enabled=false");
		arguments.add("--idempotency.cache.enabled=false");
		arguments.add("--idempotency.outbox.relay-enabled=false");
		arguments.add("--management.prometheus.metrics.export.enabled=false");
		return arguments;
	}

	private static void compile(Path sources, Path classes) throws IOException {
		List<String> files;
		try (Stream<Path> walk = Files.walk(sources)) {
			files = walk.filter((file) -> file.toString().endsWith(".java")).map(Path::toString).toList();
		}
		assertThat(files).isNotEmpty();
		JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
		// the generated classes (the proxies) are on the class path of the generated code
		List<String> options = new ArrayList<>(List.of("-d", classes.toString(), "-cp",
				classes + File.pathSeparator + classPath(), "--release", "17", "-proc:none", "-nowarn"));
		options.addAll(files);
		assertThat(compiler.run(null, null, null, options.toArray(String[]::new))).isZero();
	}

	private static Process start(Path classes, Path resources, List<String> arguments, Path log) throws IOException {
		List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
				"-Xmx384m", "-Dspring.aot.enabled=true", "-cp",
				classes.toAbsolutePath() + File.pathSeparator + resources.toAbsolutePath() + File.pathSeparator
						+ classPath(),
				AotApplication.class.getName()));
		command.addAll(arguments);
		return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
	}

	// the test class path; Surefire runs the tests from a manifest-only jar
	private static String classPath() {
		return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
	}

	private static String tail(Path log) {
		try {
			List<String> lines = Files.readAllLines(log);
			return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
		}
		catch (IOException ex) {
			return "(no log: " + ex.getMessage() + ")";
		}
	}

	private static String createDatabase(String name) {
		TestInfrastructure.Postgres postgres = TestInfrastructure.postgres();
		JdbcTemplate server = new JdbcTemplate(
				new DriverManagerDataSource(postgres.jdbcUrl(), postgres.username(), postgres.password()));
		server.execute("DROP DATABASE IF EXISTS " + name);
		server.execute("CREATE DATABASE " + name);
		return postgres.jdbcUrl().replaceFirst("^(jdbc:postgresql://[^/]+/)[^?]*", "$1" + name);
	}

}
