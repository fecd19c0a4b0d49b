package dev.idempotency.test;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * A listener application on the test servers, for the tests of one class: its topics are
 * created and it is started before the first test, and closed after the last. A test
 * class states only what differs (its configuration, topics and properties):
 *
 * <pre class="code">
 * &#64;RegisterExtension
 * static final TestApplication app = TestApplication.of(App.class)
 *     .topics("it-payments", "it-orders")
 *     .properties(TestApplications.WITHOUT_JPA);
 * </pre>
 *
 * A class whose application needs no configuration of its own names its components
 * instead, with Spring Boot's auto-configuration:
 *
 * <pre class="code">
 * &#64;RegisterExtension
 * static final TestApplication app = TestApplication.with(Listener.class)
 *     .topics("it-payments")
 *     .properties(TestApplications.WITHOUT_JPA, "test.effects-table=payment_effects");
 * </pre>
 *
 * Topics are created with one partition unless named as {@code "name:partitions"}.
 */
public final class TestApplication implements BeforeAllCallback, AfterAllCallback {

	/** The default key header of the starter. */
	public static final String KEY_HEADER = "X-Idempotency-Key";

	/** How long a test waits for records to be consumed. */
	public static final Duration TIMEOUT = Duration.ofSeconds(30);

	private final Class<?>[] sources;

	private final List<String> topics = new ArrayList<>();

	private final List<String> properties = new ArrayList<>();

	private WebApplicationType webType = WebApplicationType.NONE;

	private ConfigurableApplicationContext context;

	private TestApplication(Class<?>... sources) {
		this.sources = sources;
	}

	/**
	 * An application of the given configuration class.
	 * @param configuration the configuration class
	 * @return the extension, to register
	 */
	public static TestApplication of(Class<?> configuration) {
		return new TestApplication(configuration);
	}

	/**
	 * An application of Spring Boot's auto-configuration and the given components, for a
	 * test class that needs no configuration class of its own: its listeners, with the
	 * configurations and beans they use.
	 * @param components the components, such as listener classes
	 * @return the extension, to register
	 */
	public static TestApplication with(Class<?>... components) {
		Class<?>[] sources = new Class<?>[components.length + 1];
		sources[0] = AutoConfiguration.class;
		System.arraycopy(components, 0, sources, 1, components.length);
		return new TestApplication(sources);
	}

	/**
	 * Create these topics before the application starts.
	 * @param names the topics, {@code "name"} or {@code "name:partitions"}
	 * @return this extension
	 */
	public TestApplication topics(String... names) {
		this.topics.addAll(Arrays.asList(names));
		return this;
	}

	/**
	 * Start the application with these properties.
	 * @param properties as {@code name=value}
	 * @return this extension
	 */
	public TestApplication properties(String... properties) {
		this.properties.addAll(Arrays.asList(properties));
		return this;
	}

	/**
	 * Start the application as a servlet web application, on a random port.
	 * @return this extension
	 */
	public TestApplication web() {
		this.webType = WebApplicationType.SERVLET;
		return this;
	}

	/**
	 * The address of a path on the running web application.
	 * @param path the path, from {@code /}
	 * @return the URI
	 */
	public URI uri(String path) {
		return URI.create("http://localhost:" + context().getEnvironment().getProperty("local.server.port") + path);
	}

	@Override
	public void beforeAll(ExtensionContext extension) {
		for (String topic : this.topics) {
			int colon = topic.indexOf(':');
			TestInfrastructure.createTopic((colon < 0) ? topic : topic.substring(0, colon),
					(colon < 0) ? 1 : Integer.parseInt(topic.substring(colon + 1)));
		}
		this.context = TestApplications.run(this.webType, this.sources, this.properties.toArray(String[]::new));
	}

	@Override
	public void afterAll(ExtensionContext extension) {
		if (this.context != null) {
			this.context.close();
			this.context = null;
		}
	}

	/**
	 * The running application.
	 * @return its context
	 */
	public ConfigurableApplicationContext context() {
		if (this.context == null) {
			throw new IllegalStateException("The application of " + this.sources[this.sources.length - 1].getSimpleName()
					+ " is not running: register the extension on a static field");
		}
		return this.context;
	}

	/**
	 * A bean of the application.
	 * @param <T> the bean type
	 * @param type the bean type
	 * @return the bean
	 */
	public <T> T bean(Class<T> type) {
		return context().getBean(type);
	}

	/**
	 * The application's {@link JdbcTemplate}.
	 * @return the template
	 */
	public JdbcTemplate jdbc() {
		return bean(JdbcTemplate.class);
	}

	/**
	 * A listener container of the application.
	 * @param id the listener id
	 * @return the container
	 */
	public MessageListenerContainer container(String id) {
		MessageListenerContainer container = bean(KafkaListenerEndpointRegistry.class).getListenerContainer(id);
		if (container == null) {
			throw new IllegalArgumentException("No listener container with id " + id);
		}
		return container;
	}

	/**
	 * Send a record with an idempotency key to partition 0 and wait for its acknowledgment.
	 * @param topic the topic
	 * @param value the value
	 * @param key the {@value #KEY_HEADER} header, or {@code null} for none
	 */
	public void send(String topic, String value, String key) {
		TestKafka.send(topic, 0, value, (key != null) ? Map.of(KEY_HEADER, key) : Map.of());
	}

	/**
	 * Wait until a group has committed every record sent to partition 0 of a topic so far.
	 * @param group the consumer group
	 * @param topic the topic
	 */
	public void awaitCommitted(String group, String topic) {
		TestKafka.awaitCommitted(group, new TopicPartition(topic, 0), TIMEOUT);
	}

	/**
	 * The sum of the application's counters of a name and tags.
	 * @param name the meter name
	 * @param tags tag names and values, alternating
	 * @return the sum, 0 when there is none
	 */
	public double count(String name, String... tags) {
		return TestMeters.count(context(), name, tags);
	}

	/**
	 * The number of rows of a query's result, such as the effects of a key.
	 * @param sql a {@code SELECT count(*)} query
	 * @param arguments its arguments
	 * @return the count
	 */
	public int rows(String sql, Object... arguments) {
		Integer count = jdbc().queryForObject(sql, Integer.class, arguments);
		return (count != null) ? count : 0;
	}

	/**
	 * Wait until a group has committed every record sent to partition 0 of a topic so far,
	 * for a test that allows more (or less) time than {@link #TIMEOUT}: records that wait
	 * out an outage or a held key.
	 * @param group the consumer group
	 * @param topic the topic
	 * @param timeout how long to wait at most
	 */
	public void awaitCommitted(String group, String topic, Duration timeout) {
		TestKafka.awaitCommitted(group, new TopicPartition(topic, 0), timeout);
	}

	/**
	 * Send records to partition 0 of a topic while a listener's container is stopped, each
	 * with its value as its idempotency key, then start the container, so that they arrive
	 * in one poll, and wait until its group has committed them.
	 * @param id the listener id
	 * @param topic the topic the listener reads
	 * @param keys the records' values and keys, in order
	 */
	public void deliverInOnePoll(String id, String topic, String... keys) {
		MessageListenerContainer container = container(id);
		container.stop();
		for (String key : keys) {
			send(topic, key, key);
		}
		container.start();
		awaitCommitted(container.getGroupId(), topic);
	}

	/**
	 * Run the application for one test rather than for the tests of a class, for a class
	 * whose tests each need properties of their own: create the topics, start the
	 * application, run the test and close the application, whatever the test's outcome.
	 * @param test the test, given this application
	 */
	public void run(Consumer<TestApplication> test) {
		beforeAll(null);
		try {
			test.accept(this);
		}
		finally {
			afterAll(null);
		}
	}

	/**
	 * Close the application now rather than after the class: for an {@code @AfterAll}
	 * method that stops a server the application uses (the extension closes the
	 * application only after such methods), so that the application does not outlive it.
	 */
	public void close() {
		afterAll(null);
	}

	/**
	 * The configuration of an application {@link #with(Class...) with components}: Spring
	 * Boot's auto-configuration.
	 */
	@SpringBootConfiguration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class AutoConfiguration {

	}

}
