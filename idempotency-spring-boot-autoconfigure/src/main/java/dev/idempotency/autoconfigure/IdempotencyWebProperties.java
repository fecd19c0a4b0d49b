package dev.idempotency.autoconfigure;

import java.util.List;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Configuration of {@code @Idempotent} Spring MVC handler methods.
 *
 * @param enabled Whether to make @Idempotent web handler methods idempotent. When off,
 * an application with such a method does not start.
 * @param keyHeader Name of the request header that carries the idempotency key, used when
 * the annotation gives no key expression. Its value may be plain or a quoted
 * structured-field string.
 * @param missingKey What to do with a request to an idempotent handler that has no key:
 * "reject" it with a 400 problem detail, or "proceed" to the handler without idempotency.
 * @param maxKeyLength Maximum length of a key, in characters; a longer one gets a 400.
 * Keys longer than 255 characters are stored as their SHA-256 digest.
 * @param maxRequestSize Maximum size of a request body, which is read before the handler
 * runs to fingerprint the request; a larger one gets a 413.
 * @param maxResponseSize Maximum size of a response body stored for replays. A larger
 * response is not sent: the transactional mode rolls the request's work back, the lease
 * mode marks its key failed; either answers with a 500 problem detail.
 * @param replayedHeaders Response headers stored with the response and replayed.
 * @param fingerprintHeaders Request headers that are part of the request's fingerprint,
 * with its method, path, query and body. A key reused with another fingerprint gets a 422.
 * @param storeClientErrors Whether 4xx responses that the handler returned (not those of
 * an exception) are stored and replayed. When false, their work is rolled back and the key
 * released.
 * @param filterOrder Order of the filter that intercepts requests to idempotent handlers.
 * The default runs it after Spring Security's filter chain (-100), so that keys are
 * scoped by the authenticated principal.
 */
@ConfigurationProperties("idempotency.web")
public record IdempotencyWebProperties(@DefaultValue("true") boolean enabled,
		@DefaultValue("Idempotency-Key") String keyHeader, @DefaultValue("reject") MissingKey missingKey,
		@DefaultValue("1024") int maxKeyLength, @DefaultValue("1MB") DataSize maxRequestSize,
		@DefaultValue("64KB") DataSize maxResponseSize,
		@DefaultValue({ "Content-Type", "Content-Language", "Content-Location", "Location", "ETag",
				"Last-Modified" }) List<String> replayedHeaders,
		@DefaultValue("Content-Type") List<String> fingerprintHeaders,
		@DefaultValue("true") boolean storeClientErrors, @DefaultValue("0") int filterOrder) {

	public IdempotencyWebProperties {
		if (keyHeader.isBlank()) {
			throw new IllegalArgumentException("idempotency.web.key-header must not be blank");
		}
		if (maxKeyLength < 1) {
			throw new IllegalArgumentException("idempotency.web.max-key-length must be at least 1, was " + maxKeyLength);
		}
		if (maxRequestSize.isNegative() || maxResponseSize.isNegative()) {
			throw new IllegalArgumentException(
					"idempotency.web.max-request-size and idempotency.web.max-response-size must not be negative");
		}
	}

	/**
	 * What happens to a request to an idempotent handler that has no key.
	 */
	public enum MissingKey {

		/** Answer 400 with a problem detail. */
		REJECT,

		/** Run the handler without idempotency. */
		PROCEED

	}

}
