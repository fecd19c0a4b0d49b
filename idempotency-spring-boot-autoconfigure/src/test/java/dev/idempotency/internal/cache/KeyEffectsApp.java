package dev.idempotency.internal.cache;

import dev.idempotency.Idempotent;
import dev.idempotency.test.TestEffects;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;

/**
 * An application of the cache tests: one {@code @Idempotent} listener, on the topic of
 * the property {@code test.topic} and in the group of {@code test.group}, whose effect is
 * the record's value, in the {@link TestEffects} table {@code cache_key_effects} under
 * the name of its group.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
class KeyEffectsApp {

	@Bean
	TestEffects effects(JdbcTemplate jdbc) {
		return new TestEffects(jdbc, "cache_key_effects");
	}

	@Bean
	Listener listener(TestEffects effects, @Value("${test.group}") String group) {
		return new Listener(effects, group);
	}

	static class Listener {

		private final TestEffects effects;

		private final String group;

		Listener(TestEffects effects, String group) {
			this.effects = effects;
			this.group = group;
		}

		@KafkaListener(id = "${test.group}", topics = "${test.topic}", groupId = "${test.group}")
		@Idempotent
		public void apply(String key) {
			this.effects.add(this.group, key);
		}

	}

}
